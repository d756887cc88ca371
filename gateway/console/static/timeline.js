// The run page's live timeline: entries the server did not render yet, appended as the run's event
// stream (/console/runs/{id}/events, the session's cookie) delivers them. Without this script the
// page shows the timeline as of its load. Text only (textContent): nothing received becomes markup.
(function () {
  "use strict";
  var list = document.getElementById("timeline");
  if (!list || !window.EventSource) {
    return;
  }
  // The fields a line names, in the order gateway/console/run_detail.py SUMMARY_FIELDS names them.
  var FIELDS = ["tool", "status", "code", "action_id", "approval_id", "milestone_id", "version", "kind",
                "worker", "epoch", "by", "reason"];
  var state = document.getElementById("timeline-state");
  var last = parseInt(list.getAttribute("data-after") || "0", 10);

  function cell(tag, className, text) {
    var node = document.createElement(tag);
    node.className = className;
    node.textContent = text;
    return node;
  }

  function summary(data) {
    var parts = [];
    if (data && typeof data === "object") {
      FIELDS.forEach(function (key) {
        if (data[key] !== undefined && data[key] !== null && data[key] !== "") {
          parts.push(key + ": " + data[key]);
        }
      });
    }
    return parts.join(" · ");
  }

  function append(entry) {
    if (entry.seq <= last) {
      return; // shown at load, or already received
    }
    last = entry.seq;
    var item = document.createElement("li");
    item.className = "event live";
    item.setAttribute("data-seq", String(entry.seq));
    item.appendChild(cell("span", "seq", "#" + entry.seq));
    item.appendChild(document.createTextNode(" "));
    item.appendChild(cell("time", "at", entry.at));
    item.appendChild(document.createTextNode(" "));
    item.appendChild(cell("span", "type", entry.type));
    item.appendChild(document.createTextNode(" "));
    item.appendChild(cell("span", "message", entry.message || "")); // the type's fixed template
    item.appendChild(document.createTextNode(" "));
    item.appendChild(cell("span", "summary", summary(entry.data)));
    list.appendChild(item);
    var empty = document.getElementById("no-events");
    if (empty) {
      empty.remove();
    }
  }

  function say(text) {
    if (state) {
      state.textContent = text;
    }
  }

  var source = new EventSource(list.getAttribute("data-stream") + "?after=" + last);
  source.onopen = function () {
    say("live");
  };
  source.onmessage = function (message) {
    try {
      append(JSON.parse(message.data));
    } catch (e) {
      say("an entry could not be read; reload the page");
    }
  };
  source.onerror = function () {
    // EventSource reconnects by itself (sending the last id it got); a refusal (signed out) ends it.
    say(source.readyState === EventSource.CLOSED ? "not live: reload the page" : "reconnecting");
  };
})();
