from dataclasses import replace

import rfc8785
from hypothesis import given
from hypothesis import strategies as st

from gateway.store.chain import GENESIS, EntryRow, Head, entry_body, entry_hash, head_mac, head_message, verify_run

KEY = b"k" * 32
RUN = "run_1"
AT = 1_800_000_000.0


def _chain(n: int = 5, run_id: str = RUN, key: bytes = KEY) -> tuple[list[EntryRow], Head]:
    rows = []
    prev = GENESIS
    for seq in range(1, n + 1):
        body = entry_body(run_id, seq, "note", AT + seq, {"n": seq})
        digest = entry_hash(prev, body)
        rows.append(EntryRow(run_id, seq, "note", body, prev, digest))
        prev = digest
    return rows, Head(run_id, n, prev, head_mac(key, run_id, n, prev))


def _rechain(rows: list[EntryRow]) -> list[EntryRow]:
    """Recompute every link and hash, as someone who edited a row and covered it up would."""
    out = []
    prev = GENESIS
    for row in rows:
        digest = entry_hash(prev, row.body)
        out.append(replace(row, prev_hash=prev, hash=digest))
        prev = digest
    return out


def _first_bad(rows: list[EntryRow], head: Head | None, key: bytes = KEY) -> int | None:
    _, bad = verify_run(RUN, rows, head, key)
    assert bad is not None, "tampering went unnoticed"
    return bad.seq


def test_a_good_chain_verifies() -> None:
    rows, head = _chain(5)
    assert verify_run(RUN, rows, head, KEY) == (5, None)


def test_a_one_entry_chain_verifies() -> None:
    rows, head = _chain(1)
    assert verify_run(RUN, rows, head, KEY) == (1, None)


def test_an_edited_body_is_caught_at_its_entry() -> None:
    rows, head = _chain(5)
    rows[2] = replace(rows[2], body=entry_body(RUN, 3, "note", AT + 3, {"n": 333}))
    assert _first_bad(rows, head) == 3


def test_an_edited_type_column_is_caught_at_its_entry() -> None:
    rows, head = _chain(5)
    rows[1] = replace(rows[1], type="approval_granted")
    assert _first_bad(rows, head) == 2


def test_a_body_that_is_not_json_is_caught_at_its_entry() -> None:
    rows, head = _chain(3)
    rows[1] = replace(rows[1], body="{not json")
    assert _first_bad(rows, head) == 2


def test_a_row_copied_from_another_run_is_caught() -> None:
    rows, head = _chain(3)
    foreign, _ = _chain(3, run_id="run_2")
    rows[1] = replace(foreign[1], run_id=RUN, prev_hash=rows[1].prev_hash)
    assert _first_bad(rows, head) == 2


def test_a_missing_row_is_caught_at_the_missing_entry() -> None:
    rows, head = _chain(5)
    del rows[2]
    assert _first_bad(rows, head) == 3


def test_a_missing_first_row_is_caught_at_entry_one() -> None:
    rows, head = _chain(5)
    assert _first_bad(rows[1:], head) == 1


def test_rows_returned_out_of_order_are_caught_at_the_first_misplaced_entry() -> None:
    rows, head = _chain(5)
    rows[1], rows[2] = rows[2], rows[1]
    assert _first_bad(rows, head) == 2


def test_rows_whose_seq_numbers_were_swapped_are_caught_at_the_first_swapped_entry() -> None:
    rows, head = _chain(5)
    second, third = rows[1], rows[2]
    rows[1], rows[2] = replace(third, seq=2), replace(second, seq=3)
    assert _first_bad(rows, head) == 2


def test_a_cut_off_tail_is_caught_at_the_first_missing_entry() -> None:
    rows, head = _chain(5)
    assert _first_bad(rows[:3], head) == 4


def test_a_chain_with_every_row_gone_is_caught_at_entry_one() -> None:
    _, head = _chain(5)
    assert _first_bad([], head) == 1


def test_an_entry_appended_after_the_head_is_caught_at_that_entry() -> None:
    rows, _ = _chain(6)
    _, head_before_the_append = _chain(5)
    assert _first_bad(rows, head_before_the_append) == 6


def test_an_edit_recomputed_without_the_key_is_caught() -> None:
    rows, head = _chain(5)
    rows[2] = replace(rows[2], body=entry_body(RUN, 3, "note", AT + 3, {"n": 333}))
    rows = _rechain(rows)
    # The links all hold now; only the MAC'd head can tell, at the head.
    assert _first_bad(rows, head) == 5
    forged = Head(RUN, 5, rows[-1].hash, head_mac(b"guessed key", RUN, 5, rows[-1].hash))
    assert _first_bad(rows, forged) == 5


def test_a_tail_cut_with_the_head_moved_back_is_caught() -> None:
    rows, _ = _chain(5)
    moved = Head(RUN, 3, rows[2].hash, head_mac(b"guessed key", RUN, 3, rows[2].hash))
    assert _first_bad(rows[:3], moved) == 3


def test_verifying_with_the_wrong_key_fails_at_the_head() -> None:
    rows, head = _chain(5)
    assert _first_bad(rows, head, key=b"another key") == 5


def test_a_run_without_a_head_is_caught() -> None:
    rows, _ = _chain(3)
    _, bad = verify_run(RUN, rows, None, KEY)
    assert bad is not None and bad.seq is None and bad.run_id == RUN


def test_a_bad_entry_names_its_run_and_position() -> None:
    rows, head = _chain(3)
    rows[0] = replace(rows[0], hash="0" * 64)
    _, bad = verify_run(RUN, rows, head, KEY)
    assert bad is not None
    assert set(bad.as_dict()) == {"run_id", "seq", "problem"}
    assert (bad.as_dict()["run_id"], bad.as_dict()["seq"]) == (RUN, 1)


def test_an_entry_hash_depends_on_the_previous_hash_and_the_body() -> None:
    body = entry_body(RUN, 1, "note", AT, {"n": 1})
    assert entry_hash(GENESIS, body) != entry_hash("1" * 64, body)
    assert entry_hash(GENESIS, body) != entry_hash(GENESIS, entry_body(RUN, 1, "note", AT, {"n": 2}))


def test_an_entry_body_is_canonical_json_whatever_the_key_order() -> None:
    assert entry_body(RUN, 1, "t", AT, {"a": 1, "b": 2}) == entry_body(RUN, 1, "t", AT, {"b": 2, "a": 1})


@given(
    st.text(max_size=40),
    st.integers(min_value=0, max_value=2**53 - 1),
    st.one_of(st.text(alphabet="0123456789abcdef", min_size=64, max_size=64), st.text(max_size=70)),
)
def test_the_head_message_is_the_canonical_json_of_its_parts(run_id: str, seq: int, head_hash: str) -> None:
    # The MAC'd message is written out by hand on the hot path; it must be the bytes the verifier,
    # and any other implementation, get from RFC 8785.
    try:
        expected = rfc8785.dumps(["warrant-head-v1", run_id, seq, head_hash])
    except (rfc8785.CanonicalizationError, UnicodeEncodeError):
        return  # lone surrogates: no canonical form (run ids and hashes are ASCII anyway)
    assert head_message(run_id, seq, head_hash) == bytes(expected)
