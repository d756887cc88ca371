--
-- PostgreSQL database dump
--


-- Dumped from database version 15.20 (Debian 15.20-0+deb12u1)
-- Dumped by pg_dump version 15.20 (Debian 15.20-0+deb12u1)

SET statement_timeout = 0;
SET lock_timeout = 0;
SET idle_in_transaction_session_timeout = 0;
SET client_encoding = 'UTF8';
SET standard_conforming_strings = on;
SELECT pg_catalog.set_config('search_path', '', false);
SET check_function_bodies = false;
SET xmloption = content;
SET client_min_messages = warning;
SET row_security = off;

--
-- Data for Name: runs; Type: TABLE DATA; Schema: public; Owner: -
--

INSERT INTO public.runs (seq, run_id, tenant, lineage_id, parent_run_id, status, status_reason, spec_version, contract, currency, owner, created_by, created_at, updated_at, deadline, lease_ttl, epoch, lease_worker, lease_granted_by, lease_expires_at, spend_limit, spend_reserved, spend_spent, tool_calls_limit, tool_calls_reserved, tool_calls_spent, writes_limit, writes_reserved, writes_spent, active_seconds_limit, active_seconds_spent, active_since, count_waiting, head_seq, head_hash, head_mac, last_resumed_at, last_checkpoint_at, progress_at, checkpoint_version, acked_spec_version, predecessor_run_id, carved, completion, lease_revoked_at, cancelled_hard, successor_run_id) VALUES (4, 'run_01a2344e5c64cf1df6bbde3f', 'acme', 'lin_01a2344e5be21d52b97b749d', NULL, 'running', NULL, 'v1', '{"approvals":[],"authority":{"allow":["t__*"],"constraints":{"t__constrained":"args.to.endsWith(''@acme.example'')"},"deny":["t__denied"]},"budgets":{"active_seconds":99940,"count_waiting":false,"spend":"99.88","tool_calls":993,"writes":94},"currency":"USD","expires_in":"72h","forbid_creator_approval":false,"goal":"exercise the gate","lease_ttl":"5m","milestones":[],"owner":"ops@acme.example","progress_expectation":null,"spec_version":"v1","workers":[]}', 'USD', 'ops@acme.example', 'ops', 1800000060, 1800000060, 1800259200, 300, 0, NULL, NULL, NULL, 9988, 0, 0, 993, 0, 0, 94, 0, 0, 99940, 0, 1800000060, 0, 1, '125c783fa84e133e406c565acddfb65c8e0fe8bf5c4ce0ceb633d6ff6729ae95', '1286aaf25b048e24cbcd7b48ed250f569d3ff30f758d3a1f9e1816aa1aef9ae2', NULL, NULL, NULL, 0, 'v1', 'run_01a2344e5be2c2b5ba96f56d', NULL, NULL, NULL, 0, NULL);
INSERT INTO public.runs (seq, run_id, tenant, lineage_id, parent_run_id, status, status_reason, spec_version, contract, currency, owner, created_by, created_at, updated_at, deadline, lease_ttl, epoch, lease_worker, lease_granted_by, lease_expires_at, spend_limit, spend_reserved, spend_spent, tool_calls_limit, tool_calls_reserved, tool_calls_spent, writes_limit, writes_reserved, writes_spent, active_seconds_limit, active_seconds_spent, active_since, count_waiting, head_seq, head_hash, head_mac, last_resumed_at, last_checkpoint_at, progress_at, checkpoint_version, acked_spec_version, predecessor_run_id, carved, completion, lease_revoked_at, cancelled_hard, successor_run_id) VALUES (2, 'run_01a2344e5c434db377cc20d7', 'acme', 'lin_01a2344e5c43df2011bdc7ca', 'run_01a2344e5be2c2b5ba96f56d', 'cancelled', 'done', 'c1', '{"approvals":[],"authority":{"allow":["t__write","t__read"],"constraints":{"t__constrained":"args.to.endsWith(''@acme.example'')"},"deny":["t__denied"]},"budgets":{"active_seconds":3600,"count_waiting":false,"spend":"1.00","tool_calls":5,"writes":2},"currency":"USD","expires_in":"1h","forbid_creator_approval":false,"goal":"a part","lease_ttl":"5m","milestones":[],"owner":"ops@acme.example","progress_expectation":null,"spec_version":"c1","workers":[]}', 'USD', 'ops@acme.example', 'ops', 1800000000, 1800000000, 1800003600, 300, 2, 'child-worker', 'ops', 1800000300, 100, 0, 0, 5, 0, 1, 2, 0, 1, 3600, 0, NULL, 0, 5, '4950b25a28849126659c25eaea7b0ffbcdb46447a3d70750c9d7e9b554849573', '8ff674740f44b8fd47ba0ee4a934d974308bb82f202f975ec8e29e21928b58c7', NULL, NULL, NULL, 0, 'c1', NULL, '{"spend": 100, "tool_calls": 5, "writes": 2}', NULL, NULL, 0, NULL);
INSERT INTO public.runs (seq, run_id, tenant, lineage_id, parent_run_id, status, status_reason, spec_version, contract, currency, owner, created_by, created_at, updated_at, deadline, lease_ttl, epoch, lease_worker, lease_granted_by, lease_expires_at, spend_limit, spend_reserved, spend_spent, tool_calls_limit, tool_calls_reserved, tool_calls_spent, writes_limit, writes_reserved, writes_spent, active_seconds_limit, active_seconds_spent, active_since, count_waiting, head_seq, head_hash, head_mac, last_resumed_at, last_checkpoint_at, progress_at, checkpoint_version, acked_spec_version, predecessor_run_id, carved, completion, lease_revoked_at, cancelled_hard, successor_run_id) VALUES (1, 'run_01a2344e5be2c2b5ba96f56d', 'acme', 'lin_01a2344e5be21d52b97b749d', NULL, 'cancelled', 'stop', 'v1', '{"approvals":[],"authority":{"allow":["t__*"],"constraints":{"t__constrained":"args.to.endsWith(''@acme.example'')"},"deny":["t__denied"]},"budgets":{"active_seconds":100000,"count_waiting":false,"spend":"100.00","tool_calls":1000,"writes":100},"currency":"USD","expires_in":"72h","forbid_creator_approval":false,"goal":"exercise the gate","lease_ttl":"5m","milestones":[],"owner":"ops@acme.example","progress_expectation":null,"spec_version":"v1","workers":[]}', 'USD', 'ops@acme.example', 'ops', 1800000000, 1800000060, 1800259200, 300, 3, 'worker-2', 'ops', 1800000300, 10000, 0, 12, 1000, 0, 7, 100, 0, 6, 100000, 60, NULL, 0, 30, 'da6040617697e9b1ecb671191a1ae03bb66fab048fc4d492b7b6537decb9e555', '1e1d52f7d27f1152161e44f0c78e8ddede426cb7b8f7c96933b9ca5f5d584ba3', NULL, NULL, NULL, 0, 'v1', NULL, NULL, NULL, NULL, 0, 'run_01a2344e5c64cf1df6bbde3f');
INSERT INTO public.runs (seq, run_id, tenant, lineage_id, parent_run_id, status, status_reason, spec_version, contract, currency, owner, created_by, created_at, updated_at, deadline, lease_ttl, epoch, lease_worker, lease_granted_by, lease_expires_at, spend_limit, spend_reserved, spend_spent, tool_calls_limit, tool_calls_reserved, tool_calls_spent, writes_limit, writes_reserved, writes_spent, active_seconds_limit, active_seconds_spent, active_since, count_waiting, head_seq, head_hash, head_mac, last_resumed_at, last_checkpoint_at, progress_at, checkpoint_version, acked_spec_version, predecessor_run_id, carved, completion, lease_revoked_at, cancelled_hard, successor_run_id) VALUES (3, 'run_01a2344e5c51d8d25f57870f', 'acme', 'lin_01a2344e5c51ca742d28f1f5', NULL, 'running', NULL, 'v1', '{"approvals":[],"authority":{"allow":["t__*"],"constraints":{"t__constrained":"args.to.endsWith(''@acme.example'')"},"deny":["t__denied"]},"budgets":{"active_seconds":100000,"count_waiting":false,"spend":"100.00","tool_calls":1000,"writes":100},"currency":"USD","expires_in":"72h","forbid_creator_approval":false,"goal":"exercise the gate","lease_ttl":"5m","milestones":[],"owner":"ops@acme.example","progress_expectation":null,"spec_version":"v1","workers":[]}', 'USD', 'ops@acme.example', 'ops', 1800000000, 1800000000, 1800259200, 300, 1, 'worker-1', 'ops', 1800000300, 10000, 0, 0, 1000, 0, 1, 100, 0, 1, 100000, 0, 1800000000, 0, 4, '72ec3f6251d0c46c666140241403511dd93b1c129fcb8697ef8825c9b45a3072', 'cceede7b1a58ea6e77726851672b612f1d98e3efeaafe4fe989f4ff2914648a4', NULL, NULL, NULL, 0, 'v1', NULL, NULL, NULL, NULL, 0, NULL);


--
-- Data for Name: actions; Type: TABLE DATA; Schema: public; Owner: -
--

INSERT INTO public.actions (seq, action_id, run_id, tenant, lineage_id, tool, effect, operation_id, payload_sha256, idempotency_key, status, code, reason, epoch, worker, approval_id, repeat_of, reserved_spend, reserved_calls, reserved_writes, actual_spend, receipt, result_sha256, process_id, created_at, settled_at, acknowledged, bodies_purged_at) VALUES (8, 'act_01a2344e5c4a4379c817133a', 'run_01a2344e5c434db377cc20d7', 'acme', 'lin_01a2344e5c43df2011bdc7ca', 't__write', 'write', 'op_9273facbbb4365f1420deb92a426c8359bdf402f', '8c46aa13c9604f844a6197a713629f461ff39b0a7edf46e44085876d8718e5e5', 'wk_dj6jzwiowe7wo7veoykdvdbkp36ic7n7nyopjfbjz4rtzkg24ixa', 'succeeded', NULL, NULL, 1, 'child-worker', NULL, NULL, 0, 1, 1, 0, '{"digest": "c94609173315e6566d9c41c971ee07afb454a68b7e57c9ecad03a916861b6009", "id": "obj-6"}', 'd5e4fe643091055287c5f1e48eae4e826c87ee86a23fd65096f166e30aed7a27', 'test-gateway', 1800000000, 1800000000, NULL, NULL);
INSERT INTO public.actions (seq, action_id, run_id, tenant, lineage_id, tool, effect, operation_id, payload_sha256, idempotency_key, status, code, reason, epoch, worker, approval_id, repeat_of, reserved_spend, reserved_calls, reserved_writes, actual_spend, receipt, result_sha256, process_id, created_at, settled_at, acknowledged, bodies_purged_at) VALUES (9, 'act_01a2344e5c57df33b56142c7', 'run_01a2344e5c51d8d25f57870f', 'acme', 'lin_01a2344e5c51ca742d28f1f5', 't__write', 'write', 'op_1ed48522b8b71a4c358b43cc6d6405bf7a05c877', 'e00e9e7b184275cb2043898af04317cef74ccef59db3058dc216ff299f5c1210', 'wk_u437bnn7k7pkirdnza4w5rgv6sryxxhdfzvhdelfloje55n4ekja', 'succeeded', NULL, NULL, 1, 'worker-1', NULL, NULL, 0, 1, 1, 0, '{"digest": "d81c949e32774601f61f489a963e555464a02b1612f7d7e51742ee645e3c46ba", "id": "obj-7"}', '5102508293774a8c5ef17b3410a0fed3c3f00baf3435a350bac38efabf879793', 'test-gateway', 1800000000, 1800000000, NULL, NULL);
INSERT INTO public.actions (seq, action_id, run_id, tenant, lineage_id, tool, effect, operation_id, payload_sha256, idempotency_key, status, code, reason, epoch, worker, approval_id, repeat_of, reserved_spend, reserved_calls, reserved_writes, actual_spend, receipt, result_sha256, process_id, created_at, settled_at, acknowledged, bodies_purged_at) VALUES (1, 'act_01a2344e5bfa27bfceebc6b0', 'run_01a2344e5be2c2b5ba96f56d', 'acme', 'lin_01a2344e5be21d52b97b749d', 't__write', 'write', 'op_883ac168ff49b4ec1ff65c2df6f87305e257345e', 'a6ed1c596ebafc4723b8c295c4ebe7e062c014debf0d341251bf5fb92d26b229', 'wk_yybto6ov35cmai7pora6csxbg7za5vdjwtjlulwsge4ltqpcc3sq', 'succeeded', NULL, NULL, 1, 'worker-1', NULL, NULL, 0, 1, 1, 0, '{"digest": "a300bad6a9e51c8b508dd57fffdaef8b9236560e17010cbcaa8980529aa53cb2", "id": "obj-1"}', '9c3da1c9aaac3284d1b604ebc733b2150e94c251038dfaa8614b3adb201ee1da', 'test-gateway', 1800000000, 1800000000, NULL, 1800000060);
INSERT INTO public.actions (seq, action_id, run_id, tenant, lineage_id, tool, effect, operation_id, payload_sha256, idempotency_key, status, code, reason, epoch, worker, approval_id, repeat_of, reserved_spend, reserved_calls, reserved_writes, actual_spend, receipt, result_sha256, process_id, created_at, settled_at, acknowledged, bodies_purged_at) VALUES (2, 'act_01a2344e5c000dbbde74d8de', 'run_01a2344e5be2c2b5ba96f56d', 'acme', 'lin_01a2344e5be21d52b97b749d', 't__read', 'read', NULL, 'b4c73d1ce94ba8e327d8b4fb229327187727fa3b33eb341ea913a7352efad640', NULL, 'succeeded', NULL, NULL, 1, 'worker-1', NULL, NULL, 0, 1, 0, 0, '{"digest": "a2ed65c2d99dff6cdfceba7cfbe133cea08a7dbda349448cbbb13fa6a088df63", "id": "obj-2"}', NULL, 'test-gateway', 1800000000, 1800000000, NULL, 1800000060);
INSERT INTO public.actions (seq, action_id, run_id, tenant, lineage_id, tool, effect, operation_id, payload_sha256, idempotency_key, status, code, reason, epoch, worker, approval_id, repeat_of, reserved_spend, reserved_calls, reserved_writes, actual_spend, receipt, result_sha256, process_id, created_at, settled_at, acknowledged, bodies_purged_at) VALUES (3, 'act_01a2344e5c046b583b298149', 'run_01a2344e5be2c2b5ba96f56d', 'acme', 'lin_01a2344e5be21d52b97b749d', 't__paid', 'write', 'op_9e5a5f1f44701ea4639e67e360fb47bb09139440', 'cc38fdec7c294381078282f2ae7ec858a16f70ee29b5def0334d3205c24dcc11', 'wk_tgjesl6y47y33zdyrqagzt4mawqw2zrjwx43rs5wgldnjaewygoq', 'succeeded', NULL, NULL, 1, 'worker-1', NULL, NULL, 10, 1, 1, 5, '{"digest": "a6aa61a82edd8eab32a30ea44555847893aa017b511aa303a5b07a9113dc6675", "id": "obj-3"}', '9187f366687fa85cb47662244d05c4de581585aa82af61d51808b4932e941865', 'test-gateway', 1800000000, 1800000000, NULL, 1800000060);
INSERT INTO public.actions (seq, action_id, run_id, tenant, lineage_id, tool, effect, operation_id, payload_sha256, idempotency_key, status, code, reason, epoch, worker, approval_id, repeat_of, reserved_spend, reserved_calls, reserved_writes, actual_spend, receipt, result_sha256, process_id, created_at, settled_at, acknowledged, bodies_purged_at) VALUES (4, 'act_01a2344e5c1d11a241b4a3d6', 'run_01a2344e5be2c2b5ba96f56d', 'acme', 'lin_01a2344e5be21d52b97b749d', 't__approve', 'write', 'op_0dfe30a3f87d25fe4fecdabc3bf5da6cf16b62b4', '29eb413324469b49234b9c8fa468e4c69719ba9bd9a41333c56d802057f71d99', 'wk_qflz3j2g4y77uoyw6754bsf2jz46vn3dekjw5cdxh6lvm365sf2q', 'succeeded', NULL, NULL, 1, 'worker-1', 'apr_01a2344e5c0ceca0d9375ec7', NULL, 0, 1, 1, 0, '{"digest": "8b1b021de87736b58c36038ba452daaa1836fcf7a6a7d7040370f5f644d08d86", "id": "obj-4"}', '6d2162a2ed59c02c76be961d42fa48b99c41293563f17b7543156b730a557fce', 'test-gateway', 1800000000, 1800000000, NULL, 1800000060);
INSERT INTO public.actions (seq, action_id, run_id, tenant, lineage_id, tool, effect, operation_id, payload_sha256, idempotency_key, status, code, reason, epoch, worker, approval_id, repeat_of, reserved_spend, reserved_calls, reserved_writes, actual_spend, receipt, result_sha256, process_id, created_at, settled_at, acknowledged, bodies_purged_at) VALUES (5, 'act_01a2344e5c2fe5d68eb6d88f', 'run_01a2344e5be2c2b5ba96f56d', 'acme', 'lin_01a2344e5be21d52b97b749d', 't__denied', 'unknown', NULL, '44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a', NULL, 'rejected', 'forbidden', 'this run''s contract does not allow t__denied', 1, 'worker-1', NULL, NULL, 0, 0, 0, NULL, NULL, NULL, NULL, 1800000000, 1800000000, NULL, 1800000060);
INSERT INTO public.actions (seq, action_id, run_id, tenant, lineage_id, tool, effect, operation_id, payload_sha256, idempotency_key, status, code, reason, epoch, worker, approval_id, repeat_of, reserved_spend, reserved_calls, reserved_writes, actual_spend, receipt, result_sha256, process_id, created_at, settled_at, acknowledged, bodies_purged_at) VALUES (6, 'act_01a2344e5c31822e743e3c86', 'run_01a2344e5be2c2b5ba96f56d', 'acme', 'lin_01a2344e5be21d52b97b749d', 't__write', 'write', 'op_4de68d9e110a66160d2c178fcdd704e6cebc9265', '9ccd97529d78db316d988c9a744fcac498730ce33da7b00409df1d94d1acaf51', 'wk_lmrpcuibbnayffjrvd5pkpg377y4xvqsjyurrndudlwqso4wygyq', 'succeeded', NULL, 'looked it up', 1, 'worker-1', NULL, NULL, 0, 1, 1, 0, NULL, NULL, 'test-gateway', 1800000000, 1800000000, NULL, 1800000060);
INSERT INTO public.actions (seq, action_id, run_id, tenant, lineage_id, tool, effect, operation_id, payload_sha256, idempotency_key, status, code, reason, epoch, worker, approval_id, repeat_of, reserved_spend, reserved_calls, reserved_writes, actual_spend, receipt, result_sha256, process_id, created_at, settled_at, acknowledged, bodies_purged_at) VALUES (7, 'act_01a2344e5c3fb5b24c60af5d', 'run_01a2344e5be2c2b5ba96f56d', 'acme', 'lin_01a2344e5be21d52b97b749d', 't__write', 'write', 'op_0e58d514cfe15e182bdcdc1eb65e0f87bead86ff', 'd0285d92ec906f0dbddbc099d317215e993e1477198942dd78a1451b5b7dd010', 'wk_5kqeljxfieivujtdbz5ix652xornvdq7crdydqs623bk4f7opffq', 'succeeded', NULL, NULL, 2, 'worker-2', NULL, NULL, 0, 1, 1, 0, '{"digest": "88a8e71dd303b75ae53261d25854a799fff21a54ad6a020e2502cc1d1547c48d", "id": "obj-5"}', '2efbf0f39fc4eb35f04aba171f63e554bb7e8023d4a5170d55bcb4f9e276ec2f', 'test-gateway', 1800000000, 1800000000, NULL, 1800000060);


--
-- Data for Name: api_keys; Type: TABLE DATA; Schema: public; Owner: -
--



--
-- Data for Name: approvals; Type: TABLE DATA; Schema: public; Owner: -
--

INSERT INTO public.approvals (seq, approval_id, run_id, tenant, tool, payload_sha256, spec_version, tool_def_sha256, status, role, on_expiry, valid_for, requested_by, evidence, rationale, created_at, decide_by, valid_until, decided_by, decided_at, note, action_id, reviewer, milestone_id) VALUES (1, 'apr_01a2344e5c0ceca0d9375ec7', 'run_01a2344e5be2c2b5ba96f56d', 'acme', 't__approve', '29eb413324469b49234b9c8fa468e4c69719ba9bd9a41333c56d802057f71d99', 'v1', '8ff81c9094b9344dd75f9bb6a9fa9792a806de06a3b82ec62fab3063aa59dbee', 'used', 'approver', 'pause', 60, 'ops', NULL, NULL, 1800000000, 1800000120, 1800000060, 'ana', 1800000000, NULL, 'act_01a2344e5c1d11a241b4a3d6', NULL, NULL);
INSERT INTO public.approvals (seq, approval_id, run_id, tenant, tool, payload_sha256, spec_version, tool_def_sha256, status, role, on_expiry, valid_for, requested_by, evidence, rationale, created_at, decide_by, valid_until, decided_by, decided_at, note, action_id, reviewer, milestone_id) VALUES (2, 'apr_01a2344e5c25a667d0796839', 'run_01a2344e5be2c2b5ba96f56d', 'acme', 't__approve', '8f1b831e62d3ac6d42f5a547a10d623d0cbd44c8cb6f6e46e406a3b6335c0770', 'v1', '8ff81c9094b9344dd75f9bb6a9fa9792a806de06a3b82ec62fab3063aa59dbee', 'denied', 'approver', 'pause', 60, 'ops', NULL, NULL, 1800000000, 1800000120, NULL, 'ana', 1800000000, NULL, NULL, NULL, NULL);


--
-- Data for Name: blobs; Type: TABLE DATA; Schema: public; Owner: -
--

INSERT INTO public.blobs (sha256, body, created_at) VALUES ('b95ca1734cd6c0062d7840da4dae87f0323f274026906bd33b3d04e8ffb1bc7d', '\x7b22617070726f76616c73223a5b5d2c22617574686f72697479223a7b22616c6c6f77223a5b22745f5f2a225d2c22636f6e73747261696e7473223a7b22745f5f636f6e73747261696e6564223a22617267732e746f2e656e64735769746828274061636d652e6578616d706c652729227d2c2264656e79223a5b22745f5f64656e696564225d7d2c2262756467657473223a7b226163746976655f7365636f6e6473223a3130303030302c22636f756e745f77616974696e67223a66616c73652c227370656e64223a223130302e3030222c22746f6f6c5f63616c6c73223a313030302c22777269746573223a3130307d2c2263757272656e6379223a22555344222c22657870697265735f696e223a22373268222c22666f726269645f63726561746f725f617070726f76616c223a66616c73652c22676f616c223a226578657263697365207468652067617465222c226c656173655f74746c223a22356d222c226d696c6573746f6e6573223a5b5d2c226f776e6572223a226f70734061636d652e6578616d706c65222c2270726f67726573735f6578706563746174696f6e223a6e756c6c2c22737065635f76657273696f6e223a227631222c22776f726b657273223a5b5d7d', 1800000000);
INSERT INTO public.blobs (sha256, body, created_at) VALUES ('8f1b831e62d3ac6d42f5a547a10d623d0cbd44c8cb6f6e46e406a3b6335c0770', '\x7b2274657874223a226e6f227d', 1800000000);
INSERT INTO public.blobs (sha256, body, created_at) VALUES ('bde4ff2b4fb528c9b70c6506881d7aad0d360a54a145fea6620f298ac9313b58', '\x7b22617070726f76616c73223a5b5d2c22617574686f72697479223a7b22616c6c6f77223a5b22745f5f7772697465222c22745f5f72656164225d2c22636f6e73747261696e7473223a7b22745f5f636f6e73747261696e6564223a22617267732e746f2e656e64735769746828274061636d652e6578616d706c652729227d2c2264656e79223a5b22745f5f64656e696564225d7d2c2262756467657473223a7b226163746976655f7365636f6e6473223a333630302c22636f756e745f77616974696e67223a66616c73652c227370656e64223a22312e3030222c22746f6f6c5f63616c6c73223a352c22777269746573223a327d2c2263757272656e6379223a22555344222c22657870697265735f696e223a223168222c22666f726269645f63726561746f725f617070726f76616c223a66616c73652c22676f616c223a22612070617274222c226c656173655f74746c223a22356d222c226d696c6573746f6e6573223a5b5d2c226f776e6572223a226f70734061636d652e6578616d706c65222c2270726f67726573735f6578706563746174696f6e223a6e756c6c2c22737065635f76657273696f6e223a226331222c22776f726b657273223a5b5d7d', 1800000000);
INSERT INTO public.blobs (sha256, body, created_at) VALUES ('8c46aa13c9604f844a6197a713629f461ff39b0a7edf46e44085876d8718e5e5', '\x7b2274657874223a226368696c64227d', 1800000000);
INSERT INTO public.blobs (sha256, body, created_at) VALUES ('d5e4fe643091055287c5f1e48eae4e826c87ee86a23fd65096f166e30aed7a27', '\x7b22636f6e74656e74223a5b7b2274657874223a227b5c2269645c223a205c226f626a2d365c222c205c22746f6f6c5c223a205c2277726974655c227d222c2274797065223a2274657874227d5d2c2273747275637475726564223a7b226964223a226f626a2d36222c22746f6f6c223a227772697465227d7d', 1800000000);
INSERT INTO public.blobs (sha256, body, created_at) VALUES ('e00e9e7b184275cb2043898af04317cef74ccef59db3058dc216ff299f5c1210', '\x7b2274657874223a226f74686572227d', 1800000000);
INSERT INTO public.blobs (sha256, body, created_at) VALUES ('5102508293774a8c5ef17b3410a0fed3c3f00baf3435a350bac38efabf879793', '\x7b22636f6e74656e74223a5b7b2274657874223a227b5c2269645c223a205c226f626a2d375c222c205c22746f6f6c5c223a205c2277726974655c227d222c2274797065223a2274657874227d5d2c2273747275637475726564223a7b226964223a226f626a2d37222c22746f6f6c223a227772697465227d7d', 1800000000);
INSERT INTO public.blobs (sha256, body, created_at) VALUES ('16c3e04908b51822ce40bb392b8aed8de8d7fbaa8c20c19cd64c627dd7de8c42', '\x7b22617070726f76616c73223a5b5d2c22617574686f72697479223a7b22616c6c6f77223a5b22745f5f2a225d2c22636f6e73747261696e7473223a7b22745f5f636f6e73747261696e6564223a22617267732e746f2e656e64735769746828274061636d652e6578616d706c652729227d2c2264656e79223a5b22745f5f64656e696564225d7d2c2262756467657473223a7b226163746976655f7365636f6e6473223a39393934302c22636f756e745f77616974696e67223a66616c73652c227370656e64223a2239392e3838222c22746f6f6c5f63616c6c73223a3939332c22777269746573223a39347d2c2263757272656e6379223a22555344222c22657870697265735f696e223a22373268222c22666f726269645f63726561746f725f617070726f76616c223a66616c73652c22676f616c223a226578657263697365207468652067617465222c226c656173655f74746c223a22356d222c226d696c6573746f6e6573223a5b5d2c226f776e6572223a226f70734061636d652e6578616d706c65222c2270726f67726573735f6578706563746174696f6e223a6e756c6c2c22737065635f76657273696f6e223a227631222c22776f726b657273223a5b5d7d', 1800000060);


--
-- Data for Name: charges; Type: TABLE DATA; Schema: public; Owner: -
--

INSERT INTO public.charges (seq, charge_id, run_id, tenant, kind, tag, amount, note, ref, principal, created_at) VALUES (1, 'chg_01a2344e5c3932f05c2008ee', 'run_01a2344e5be2c2b5ba96f56d', 'acme', 'model', 'model', 7, NULL, NULL, 'ops', 1800000000);


--
-- Data for Name: checkpoints; Type: TABLE DATA; Schema: public; Owner: -
--



--
-- Data for Name: events; Type: TABLE DATA; Schema: public; Owner: -
--

INSERT INTO public.events (run_id, seq, type, at, body, prev_hash, hash) VALUES ('run_01a2344e5be2c2b5ba96f56d', 1, 'run_created', 1800000000, '{"at":"2027-01-15T08:00:00.000000Z","data":{"by":"ops","contract_sha256":"b95ca1734cd6c0062d7840da4dae87f0323f274026906bd33b3d04e8ffb1bc7d","deadline":"2027-01-18T08:00:00.000000Z","lineage_id":"lin_01a2344e5be21d52b97b749d","spec_version":"v1","tenant":"acme"},"run_id":"run_01a2344e5be2c2b5ba96f56d","seq":1,"type":"run_created","v":1}', '0000000000000000000000000000000000000000000000000000000000000000', '0314880a46209aa3479940ef9bb7e139f77c05bf97571103f9a4430910b2ccbe');
INSERT INTO public.events (run_id, seq, type, at, body, prev_hash, hash) VALUES ('run_01a2344e5be2c2b5ba96f56d', 2, 'lease_granted', 1800000000, '{"at":"2027-01-15T08:00:00.000000Z","data":{"by":"ops","epoch":1,"previous_worker":null,"takeover":false,"worker":"worker-1"},"run_id":"run_01a2344e5be2c2b5ba96f56d","seq":2,"type":"lease_granted","v":1}', '0314880a46209aa3479940ef9bb7e139f77c05bf97571103f9a4430910b2ccbe', '064fe25cd31ce2f17691bc477ed627d0edb5ca2e0b39a3a6d65df5c639310fcf');
INSERT INTO public.events (run_id, seq, type, at, body, prev_hash, hash) VALUES ('run_01a2344e5be2c2b5ba96f56d', 3, 'action_admitted', 1800000000, '{"at":"2027-01-15T08:00:00.000000Z","data":{"action_id":"act_01a2344e5bfa27bfceebc6b0","approval_id":null,"effect":"write","epoch":1,"operation_id":"op_883ac168ff49b4ec1ff65c2df6f87305e257345e","payload_sha256":"a6ed1c596ebafc4723b8c295c4ebe7e062c014debf0d341251bf5fb92d26b229","process_id":"test-gateway","repeat_of":null,"reserved":{"spend":"0.00","tool_calls":1,"writes":1},"tool":"t__write","worker":"worker-1"},"run_id":"run_01a2344e5be2c2b5ba96f56d","seq":3,"type":"action_admitted","v":1}', '064fe25cd31ce2f17691bc477ed627d0edb5ca2e0b39a3a6d65df5c639310fcf', '59c8e305488a14a291a786661b6f63f241865707d68e7cbc3f5c142f2beaacf0');
INSERT INTO public.events (run_id, seq, type, at, body, prev_hash, hash) VALUES ('run_01a2344e5be2c2b5ba96f56d', 4, 'action_settled', 1800000000, '{"at":"2027-01-15T08:00:00.000000Z","data":{"action_id":"act_01a2344e5bfa27bfceebc6b0","actual_spend":"0.00","code":null,"previous":"admitted","receipt":{"digest":"a300bad6a9e51c8b508dd57fffdaef8b9236560e17010cbcaa8980529aa53cb2","id":"obj-1"},"result_sha256":"9c3da1c9aaac3284d1b604ebc733b2150e94c251038dfaa8614b3adb201ee1da","sent":true,"status":"succeeded"},"run_id":"run_01a2344e5be2c2b5ba96f56d","seq":4,"type":"action_settled","v":1}', '59c8e305488a14a291a786661b6f63f241865707d68e7cbc3f5c142f2beaacf0', '2e574a3fa11e2d843768fc4383df8e4f5fa69d157873073bf23040bc35617a40');
INSERT INTO public.events (run_id, seq, type, at, body, prev_hash, hash) VALUES ('run_01a2344e5be2c2b5ba96f56d', 5, 'action_settled', 1800000000, '{"at":"2027-01-15T08:00:00.000000Z","data":{"action_id":"act_01a2344e5c000dbbde74d8de","actual_spend":"0.00","code":null,"effect":"read","epoch":1,"payload_sha256":"b4c73d1ce94ba8e327d8b4fb229327187727fa3b33eb341ea913a7352efad640","previous":"admitted","process_id":"test-gateway","receipt":{"digest":"a2ed65c2d99dff6cdfceba7cfbe133cea08a7dbda349448cbbb13fa6a088df63","id":"obj-2"},"result_sha256":null,"sent":true,"status":"succeeded","tool":"t__read","worker":"worker-1"},"run_id":"run_01a2344e5be2c2b5ba96f56d","seq":5,"type":"action_settled","v":1}', '2e574a3fa11e2d843768fc4383df8e4f5fa69d157873073bf23040bc35617a40', 'f7cbf5d1996941fc6ab7b77d486fcd755c0c20389947dbc49a95cd3e5c555458');
INSERT INTO public.events (run_id, seq, type, at, body, prev_hash, hash) VALUES ('run_01a2344e5be2c2b5ba96f56d', 6, 'action_admitted', 1800000000, '{"at":"2027-01-15T08:00:00.000000Z","data":{"action_id":"act_01a2344e5c046b583b298149","approval_id":null,"effect":"write","epoch":1,"operation_id":"op_9e5a5f1f44701ea4639e67e360fb47bb09139440","payload_sha256":"cc38fdec7c294381078282f2ae7ec858a16f70ee29b5def0334d3205c24dcc11","process_id":"test-gateway","repeat_of":null,"reserved":{"spend":"0.10","tool_calls":1,"writes":1},"tool":"t__paid","worker":"worker-1"},"run_id":"run_01a2344e5be2c2b5ba96f56d","seq":6,"type":"action_admitted","v":1}', 'f7cbf5d1996941fc6ab7b77d486fcd755c0c20389947dbc49a95cd3e5c555458', '4784574684c78f0a244b6ecdeacf5075e0af6212f435eb40211886215f2d5787');
INSERT INTO public.events (run_id, seq, type, at, body, prev_hash, hash) VALUES ('run_01a2344e5be2c2b5ba96f56d', 7, 'action_settled', 1800000000, '{"at":"2027-01-15T08:00:00.000000Z","data":{"action_id":"act_01a2344e5c046b583b298149","actual_spend":"0.05","code":null,"previous":"admitted","receipt":{"digest":"a6aa61a82edd8eab32a30ea44555847893aa017b511aa303a5b07a9113dc6675","id":"obj-3"},"result_sha256":"9187f366687fa85cb47662244d05c4de581585aa82af61d51808b4932e941865","sent":true,"status":"succeeded"},"run_id":"run_01a2344e5be2c2b5ba96f56d","seq":7,"type":"action_settled","v":1}', '4784574684c78f0a244b6ecdeacf5075e0af6212f435eb40211886215f2d5787', '272142817005e468456f11ff23a9169cde0d4d7913873d3d1b6d915a9c8af569');
INSERT INTO public.events (run_id, seq, type, at, body, prev_hash, hash) VALUES ('run_01a2344e5be2c2b5ba96f56d', 8, 'approval_requested', 1800000000, '{"at":"2027-01-15T08:00:00.000000Z","data":{"approval_id":"apr_01a2344e5c0ceca0d9375ec7","decide_by":"2027-01-15T08:02:00.000000Z","payload_sha256":"29eb413324469b49234b9c8fa468e4c69719ba9bd9a41333c56d802057f71d99","requested_by":"ops","spec_version":"v1","tool":"t__approve","tool_def_sha256":"8ff81c9094b9344dd75f9bb6a9fa9792a806de06a3b82ec62fab3063aa59dbee"},"run_id":"run_01a2344e5be2c2b5ba96f56d","seq":8,"type":"approval_requested","v":1}', '272142817005e468456f11ff23a9169cde0d4d7913873d3d1b6d915a9c8af569', '7d4d44bf1a5844a0435f4936a188b6148a2501378974259e5e6c651827388e22');
INSERT INTO public.events (run_id, seq, type, at, body, prev_hash, hash) VALUES ('run_01a2344e5be2c2b5ba96f56d', 9, 'run_waiting', 1800000000, '{"at":"2027-01-15T08:00:00.000000Z","data":{"approval_id":"apr_01a2344e5c0ceca0d9375ec7","by":"gateway","previous":"running","reason":"approval apr_01a2344e5c0ceca0d9375ec7 is pending"},"run_id":"run_01a2344e5be2c2b5ba96f56d","seq":9,"type":"run_waiting","v":1}', '7d4d44bf1a5844a0435f4936a188b6148a2501378974259e5e6c651827388e22', 'efccbb97b6da5246166a532609cd65630e678dbe9300e55d66e8b35cfbe97ff0');
INSERT INTO public.events (run_id, seq, type, at, body, prev_hash, hash) VALUES ('run_01a2344e5be2c2b5ba96f56d', 10, 'approval_approved', 1800000000, '{"at":"2027-01-15T08:00:00.000000Z","data":{"approval_id":"apr_01a2344e5c0ceca0d9375ec7","by":"ana","note":null,"payload_sha256":"29eb413324469b49234b9c8fa468e4c69719ba9bd9a41333c56d802057f71d99","valid_until":"2027-01-15T08:01:00.000000Z"},"run_id":"run_01a2344e5be2c2b5ba96f56d","seq":10,"type":"approval_approved","v":1}', 'efccbb97b6da5246166a532609cd65630e678dbe9300e55d66e8b35cfbe97ff0', '9203501ea046f35393a3582ca85dbbc9220b6bd6710df6e894db16db9d85263b');
INSERT INTO public.events (run_id, seq, type, at, body, prev_hash, hash) VALUES ('run_01a2344e5be2c2b5ba96f56d', 11, 'run_running', 1800000000, '{"at":"2027-01-15T08:00:00.000000Z","data":{"by":"ana","previous":"waiting","reason":"no approval pending"},"run_id":"run_01a2344e5be2c2b5ba96f56d","seq":11,"type":"run_running","v":1}', '9203501ea046f35393a3582ca85dbbc9220b6bd6710df6e894db16db9d85263b', 'f5e5571e9e8f6326b4a33abf0b8f55fab5b9de7132587056bca13f7f0d5ef501');
INSERT INTO public.events (run_id, seq, type, at, body, prev_hash, hash) VALUES ('run_01a2344e5be2c2b5ba96f56d', 12, 'action_admitted', 1800000000, '{"at":"2027-01-15T08:00:00.000000Z","data":{"action_id":"act_01a2344e5c1d11a241b4a3d6","approval_id":"apr_01a2344e5c0ceca0d9375ec7","effect":"write","epoch":1,"operation_id":"op_0dfe30a3f87d25fe4fecdabc3bf5da6cf16b62b4","payload_sha256":"29eb413324469b49234b9c8fa468e4c69719ba9bd9a41333c56d802057f71d99","process_id":"test-gateway","repeat_of":null,"reserved":{"spend":"0.00","tool_calls":1,"writes":1},"tool":"t__approve","worker":"worker-1"},"run_id":"run_01a2344e5be2c2b5ba96f56d","seq":12,"type":"action_admitted","v":1}', 'f5e5571e9e8f6326b4a33abf0b8f55fab5b9de7132587056bca13f7f0d5ef501', 'f4664226c7852aba554e5eb38c82e8fbf244aba526b37d48be101d4b12174a4f');
INSERT INTO public.events (run_id, seq, type, at, body, prev_hash, hash) VALUES ('run_01a2344e5be2c2b5ba96f56d', 13, 'action_settled', 1800000000, '{"at":"2027-01-15T08:00:00.000000Z","data":{"action_id":"act_01a2344e5c1d11a241b4a3d6","actual_spend":"0.00","code":null,"previous":"admitted","receipt":{"digest":"8b1b021de87736b58c36038ba452daaa1836fcf7a6a7d7040370f5f644d08d86","id":"obj-4"},"result_sha256":"6d2162a2ed59c02c76be961d42fa48b99c41293563f17b7543156b730a557fce","sent":true,"status":"succeeded"},"run_id":"run_01a2344e5be2c2b5ba96f56d","seq":13,"type":"action_settled","v":1}', 'f4664226c7852aba554e5eb38c82e8fbf244aba526b37d48be101d4b12174a4f', '64622958823741124ad1c32856cb1a247cacfb6d94dd2e28fef871a2b7b5ed49');
INSERT INTO public.events (run_id, seq, type, at, body, prev_hash, hash) VALUES ('run_01a2344e5be2c2b5ba96f56d', 14, 'approval_requested', 1800000000, '{"at":"2027-01-15T08:00:00.000000Z","data":{"approval_id":"apr_01a2344e5c25a667d0796839","decide_by":"2027-01-15T08:02:00.000000Z","payload_sha256":"8f1b831e62d3ac6d42f5a547a10d623d0cbd44c8cb6f6e46e406a3b6335c0770","requested_by":"ops","spec_version":"v1","tool":"t__approve","tool_def_sha256":"8ff81c9094b9344dd75f9bb6a9fa9792a806de06a3b82ec62fab3063aa59dbee"},"run_id":"run_01a2344e5be2c2b5ba96f56d","seq":14,"type":"approval_requested","v":1}', '64622958823741124ad1c32856cb1a247cacfb6d94dd2e28fef871a2b7b5ed49', 'bf2401fa7ae952fae3034e844ea5aec4092eaa76da3aef76223c1ad57bb56011');
INSERT INTO public.events (run_id, seq, type, at, body, prev_hash, hash) VALUES ('run_01a2344e5be2c2b5ba96f56d', 15, 'run_waiting', 1800000000, '{"at":"2027-01-15T08:00:00.000000Z","data":{"approval_id":"apr_01a2344e5c25a667d0796839","by":"gateway","previous":"running","reason":"approval apr_01a2344e5c25a667d0796839 is pending"},"run_id":"run_01a2344e5be2c2b5ba96f56d","seq":15,"type":"run_waiting","v":1}', 'bf2401fa7ae952fae3034e844ea5aec4092eaa76da3aef76223c1ad57bb56011', '58fb5940f004b55d23cc112d3fb204b6779ed1ea481a03fb46908e382a184530');
INSERT INTO public.events (run_id, seq, type, at, body, prev_hash, hash) VALUES ('run_01a2344e5be2c2b5ba96f56d', 16, 'approval_denied', 1800000000, '{"at":"2027-01-15T08:00:00.000000Z","data":{"approval_id":"apr_01a2344e5c25a667d0796839","by":"ana","note":null,"payload_sha256":"8f1b831e62d3ac6d42f5a547a10d623d0cbd44c8cb6f6e46e406a3b6335c0770","valid_until":null},"run_id":"run_01a2344e5be2c2b5ba96f56d","seq":16,"type":"approval_denied","v":1}', '58fb5940f004b55d23cc112d3fb204b6779ed1ea481a03fb46908e382a184530', 'b82765bda27d219260ab360ec0cb53a59ae20f756df82fc4ffdfae1ca356d861');
INSERT INTO public.events (run_id, seq, type, at, body, prev_hash, hash) VALUES ('run_01a2344e5be2c2b5ba96f56d', 17, 'run_running', 1800000000, '{"at":"2027-01-15T08:00:00.000000Z","data":{"by":"ana","previous":"waiting","reason":"no approval pending"},"run_id":"run_01a2344e5be2c2b5ba96f56d","seq":17,"type":"run_running","v":1}', 'b82765bda27d219260ab360ec0cb53a59ae20f756df82fc4ffdfae1ca356d861', 'e6c3f0932652e1fc37b2beb4c917b2882b82546f545433ccad7680a5e4d6946c');
INSERT INTO public.events (run_id, seq, type, at, body, prev_hash, hash) VALUES ('run_01a2344e5be2c2b5ba96f56d', 18, 'action_rejected', 1800000000, '{"at":"2027-01-15T08:00:00.000000Z","data":{"action_id":"act_01a2344e5c2fe5d68eb6d88f","code":"forbidden","epoch":1,"payload_sha256":"44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a","tool":"t__denied","worker":"worker-1"},"run_id":"run_01a2344e5be2c2b5ba96f56d","seq":18,"type":"action_rejected","v":1}', 'e6c3f0932652e1fc37b2beb4c917b2882b82546f545433ccad7680a5e4d6946c', '756bcd13f3c20b7bf6f579b53a8d11ee6bd7407cb749b9c91f997dc11211e43c');
INSERT INTO public.events (run_id, seq, type, at, body, prev_hash, hash) VALUES ('run_01a2344e5be2c2b5ba96f56d', 20, 'action_settled', 1800000000, '{"at":"2027-01-15T08:00:00.000000Z","data":{"action_id":"act_01a2344e5c31822e743e3c86","actual_spend":null,"code":"outcome_unknown","previous":"admitted","reason":"the adapter failed unexpectedly","receipt":null,"result_sha256":null,"sent":true,"status":"unknown"},"run_id":"run_01a2344e5be2c2b5ba96f56d","seq":20,"type":"action_settled","v":1}', '2afb32e77ff582a8d20d1e2bc27b170514167441b17076f420a5b480edfd69e6', '96d88724ad2bda3b97633c89ebed23d0aad5128fae11ee60c53e4898b6966809');
INSERT INTO public.events (run_id, seq, type, at, body, prev_hash, hash) VALUES ('run_01a2344e5be2c2b5ba96f56d', 22, 'usage_reported', 1800000000, '{"at":"2027-01-15T08:00:00.000000Z","data":{"amount":"0.07","by":"ops","charge_id":"chg_01a2344e5c3932f05c2008ee","kind":"model","note":null,"ref":null,"tag":"model"},"run_id":"run_01a2344e5be2c2b5ba96f56d","seq":22,"type":"usage_reported","v":1}', '034d695662781c2d36d4a4b7826620eb79b0689e113f35b61ea39b41f65c3304', 'a6c149b6a15e86a2240fba08a5e5dcf1378f2800a77618fc90a6b66a2941e935');
INSERT INTO public.events (run_id, seq, type, at, body, prev_hash, hash) VALUES ('run_01a2344e5be2c2b5ba96f56d', 25, 'action_settled', 1800000000, '{"at":"2027-01-15T08:00:00.000000Z","data":{"action_id":"act_01a2344e5c3fb5b24c60af5d","actual_spend":"0.00","code":null,"previous":"admitted","receipt":{"digest":"88a8e71dd303b75ae53261d25854a799fff21a54ad6a020e2502cc1d1547c48d","id":"obj-5"},"result_sha256":"2efbf0f39fc4eb35f04aba171f63e554bb7e8023d4a5170d55bcb4f9e276ec2f","sent":true,"status":"succeeded"},"run_id":"run_01a2344e5be2c2b5ba96f56d","seq":25,"type":"action_settled","v":1}', '5d7a2e32561f52305acd191b85ccde4910bbd797d69af3b1d85a30b723f9835c', '9bf63b0f98449fbd1427f9f505e2e676abafc01f7aec550b3ffbc5712c5e8f5d');
INSERT INTO public.events (run_id, seq, type, at, body, prev_hash, hash) VALUES ('run_01a2344e5c434db377cc20d7', 2, 'lease_granted', 1800000000, '{"at":"2027-01-15T08:00:00.000000Z","data":{"by":"ops","epoch":1,"previous_worker":null,"takeover":false,"worker":"child-worker"},"run_id":"run_01a2344e5c434db377cc20d7","seq":2,"type":"lease_granted","v":1}', 'de40b22b8d805be531702e26aa249b81a54db4d46278a643a9cb9b1b081e74ae', '1a3f9102f8874c7350196ecc1c169838589b94325d81195ce9cdc29430cc84d6');
INSERT INTO public.events (run_id, seq, type, at, body, prev_hash, hash) VALUES ('run_01a2344e5c434db377cc20d7', 3, 'action_admitted', 1800000000, '{"at":"2027-01-15T08:00:00.000000Z","data":{"action_id":"act_01a2344e5c4a4379c817133a","approval_id":null,"effect":"write","epoch":1,"operation_id":"op_9273facbbb4365f1420deb92a426c8359bdf402f","payload_sha256":"8c46aa13c9604f844a6197a713629f461ff39b0a7edf46e44085876d8718e5e5","process_id":"test-gateway","repeat_of":null,"reserved":{"spend":"0.00","tool_calls":1,"writes":1},"tool":"t__write","worker":"child-worker"},"run_id":"run_01a2344e5c434db377cc20d7","seq":3,"type":"action_admitted","v":1}', '1a3f9102f8874c7350196ecc1c169838589b94325d81195ce9cdc29430cc84d6', 'ef401768ab2ba2d0594f8cb46b628991bb39993412f0cf84626890eab40a9acc');
INSERT INTO public.events (run_id, seq, type, at, body, prev_hash, hash) VALUES ('run_01a2344e5c434db377cc20d7', 5, 'run_cancelled', 1800000000, '{"at":"2027-01-15T08:00:00.000000Z","data":{"by":"ops","hard":false,"previous":"running","reason":"done"},"run_id":"run_01a2344e5c434db377cc20d7","seq":5,"type":"run_cancelled","v":1}', 'e8f1c6c10011b91cd9f7c496d6c9114e934ae2e075db7de6d18e7d100bf4cf31', '4950b25a28849126659c25eaea7b0ffbcdb46447a3d70750c9d7e9b554849573');
INSERT INTO public.events (run_id, seq, type, at, body, prev_hash, hash) VALUES ('run_01a2344e5be2c2b5ba96f56d', 27, 'child_ended', 1800000000, '{"at":"2027-01-15T08:00:00.000000Z","data":{"child_run_id":"run_01a2344e5c434db377cc20d7","reserved":{"spend":"0.00","tool_calls":0,"writes":0},"returned":{"spend":"1.00","tool_calls":4,"writes":1},"spent":{"spend":"0.00","tool_calls":1,"writes":1},"status":"cancelled"},"run_id":"run_01a2344e5be2c2b5ba96f56d","seq":27,"type":"child_ended","v":1}', '200808889390a9d30c648806b40a779aa44be48d6075fc1fb362ca636c697ed8', '33bd4eed5aa8225afb0add18015f703c787d789ed9b036e0d6588774afb5362b');
INSERT INTO public.events (run_id, seq, type, at, body, prev_hash, hash) VALUES ('run_01a2344e5c51d8d25f57870f', 2, 'lease_granted', 1800000000, '{"at":"2027-01-15T08:00:00.000000Z","data":{"by":"ops","epoch":1,"previous_worker":null,"takeover":false,"worker":"worker-1"},"run_id":"run_01a2344e5c51d8d25f57870f","seq":2,"type":"lease_granted","v":1}', '8ac3be01adc3d02cf136a722c3c76e2a3be36cfdfd344169e58c6c324d05b341', '7814265fe00e0a696da7a192d1e120d5adcb6920f9d87ca6e447c407badcf698');
INSERT INTO public.events (run_id, seq, type, at, body, prev_hash, hash) VALUES ('run_01a2344e5c51d8d25f57870f', 3, 'action_admitted', 1800000000, '{"at":"2027-01-15T08:00:00.000000Z","data":{"action_id":"act_01a2344e5c57df33b56142c7","approval_id":null,"effect":"write","epoch":1,"operation_id":"op_1ed48522b8b71a4c358b43cc6d6405bf7a05c877","payload_sha256":"e00e9e7b184275cb2043898af04317cef74ccef59db3058dc216ff299f5c1210","process_id":"test-gateway","repeat_of":null,"reserved":{"spend":"0.00","tool_calls":1,"writes":1},"tool":"t__write","worker":"worker-1"},"run_id":"run_01a2344e5c51d8d25f57870f","seq":3,"type":"action_admitted","v":1}', '7814265fe00e0a696da7a192d1e120d5adcb6920f9d87ca6e447c407badcf698', 'd12633296f0a3e4a8fc8e2684baae11cd9fdb3d19fbb636acc8bb7ad66101dce');
INSERT INTO public.events (run_id, seq, type, at, body, prev_hash, hash) VALUES ('run_01a2344e5be2c2b5ba96f56d', 19, 'action_admitted', 1800000000, '{"at":"2027-01-15T08:00:00.000000Z","data":{"action_id":"act_01a2344e5c31822e743e3c86","approval_id":null,"effect":"write","epoch":1,"operation_id":"op_4de68d9e110a66160d2c178fcdd704e6cebc9265","payload_sha256":"9ccd97529d78db316d988c9a744fcac498730ce33da7b00409df1d94d1acaf51","process_id":"test-gateway","repeat_of":null,"reserved":{"spend":"0.00","tool_calls":1,"writes":1},"tool":"t__write","worker":"worker-1"},"run_id":"run_01a2344e5be2c2b5ba96f56d","seq":19,"type":"action_admitted","v":1}', '756bcd13f3c20b7bf6f579b53a8d11ee6bd7407cb749b9c91f997dc11211e43c', '2afb32e77ff582a8d20d1e2bc27b170514167441b17076f420a5b480edfd69e6');
INSERT INTO public.events (run_id, seq, type, at, body, prev_hash, hash) VALUES ('run_01a2344e5be2c2b5ba96f56d', 21, 'action_settled', 1800000000, '{"at":"2027-01-15T08:00:00.000000Z","data":{"action_id":"act_01a2344e5c31822e743e3c86","actual_spend":"0.00","code":null,"previous":"unknown","receipt":null,"result_sha256":null,"sent":true,"status":"succeeded"},"run_id":"run_01a2344e5be2c2b5ba96f56d","seq":21,"type":"action_settled","v":1}', '96d88724ad2bda3b97633c89ebed23d0aad5128fae11ee60c53e4898b6966809', '034d695662781c2d36d4a4b7826620eb79b0689e113f35b61ea39b41f65c3304');
INSERT INTO public.events (run_id, seq, type, at, body, prev_hash, hash) VALUES ('run_01a2344e5be2c2b5ba96f56d', 23, 'lease_granted', 1800000000, '{"at":"2027-01-15T08:00:00.000000Z","data":{"by":"ops","epoch":2,"previous_worker":"worker-1","takeover":true,"worker":"worker-2"},"run_id":"run_01a2344e5be2c2b5ba96f56d","seq":23,"type":"lease_granted","v":1}', 'a6c149b6a15e86a2240fba08a5e5dcf1378f2800a77618fc90a6b66a2941e935', 'f5133e19addaa387268d55273de5da36bcf034469e86672953c498e4a35f5477');
INSERT INTO public.events (run_id, seq, type, at, body, prev_hash, hash) VALUES ('run_01a2344e5be2c2b5ba96f56d', 24, 'action_admitted', 1800000000, '{"at":"2027-01-15T08:00:00.000000Z","data":{"action_id":"act_01a2344e5c3fb5b24c60af5d","approval_id":null,"effect":"write","epoch":2,"operation_id":"op_0e58d514cfe15e182bdcdc1eb65e0f87bead86ff","payload_sha256":"d0285d92ec906f0dbddbc099d317215e993e1477198942dd78a1451b5b7dd010","process_id":"test-gateway","repeat_of":null,"reserved":{"spend":"0.00","tool_calls":1,"writes":1},"tool":"t__write","worker":"worker-2"},"run_id":"run_01a2344e5be2c2b5ba96f56d","seq":24,"type":"action_admitted","v":1}', 'f5133e19addaa387268d55273de5da36bcf034469e86672953c498e4a35f5477', '5d7a2e32561f52305acd191b85ccde4910bbd797d69af3b1d85a30b723f9835c');
INSERT INTO public.events (run_id, seq, type, at, body, prev_hash, hash) VALUES ('run_01a2344e5c434db377cc20d7', 1, 'run_created', 1800000000, '{"at":"2027-01-15T08:00:00.000000Z","data":{"by":"ops","carved":{"spend":"1.00","tool_calls":5,"writes":2},"contract_sha256":"bde4ff2b4fb528c9b70c6506881d7aad0d360a54a145fea6620f298ac9313b58","deadline":"2027-01-15T09:00:00.000000Z","lineage_id":"lin_01a2344e5c43df2011bdc7ca","parent_run_id":"run_01a2344e5be2c2b5ba96f56d","spec_version":"c1","tenant":"acme"},"run_id":"run_01a2344e5c434db377cc20d7","seq":1,"type":"run_created","v":1}', '0000000000000000000000000000000000000000000000000000000000000000', 'de40b22b8d805be531702e26aa249b81a54db4d46278a643a9cb9b1b081e74ae');
INSERT INTO public.events (run_id, seq, type, at, body, prev_hash, hash) VALUES ('run_01a2344e5be2c2b5ba96f56d', 26, 'child_created', 1800000000, '{"at":"2027-01-15T08:00:00.000000Z","data":{"by":"ops","carved":{"spend":"1.00","tool_calls":5,"writes":2},"child_run_id":"run_01a2344e5c434db377cc20d7","clamped":false},"run_id":"run_01a2344e5be2c2b5ba96f56d","seq":26,"type":"child_created","v":1}', '9bf63b0f98449fbd1427f9f505e2e676abafc01f7aec550b3ffbc5712c5e8f5d', '200808889390a9d30c648806b40a779aa44be48d6075fc1fb362ca636c697ed8');
INSERT INTO public.events (run_id, seq, type, at, body, prev_hash, hash) VALUES ('run_01a2344e5c434db377cc20d7', 4, 'action_settled', 1800000000, '{"at":"2027-01-15T08:00:00.000000Z","data":{"action_id":"act_01a2344e5c4a4379c817133a","actual_spend":"0.00","code":null,"previous":"admitted","receipt":{"digest":"c94609173315e6566d9c41c971ee07afb454a68b7e57c9ecad03a916861b6009","id":"obj-6"},"result_sha256":"d5e4fe643091055287c5f1e48eae4e826c87ee86a23fd65096f166e30aed7a27","sent":true,"status":"succeeded"},"run_id":"run_01a2344e5c434db377cc20d7","seq":4,"type":"action_settled","v":1}', 'ef401768ab2ba2d0594f8cb46b628991bb39993412f0cf84626890eab40a9acc', 'e8f1c6c10011b91cd9f7c496d6c9114e934ae2e075db7de6d18e7d100bf4cf31');
INSERT INTO public.events (run_id, seq, type, at, body, prev_hash, hash) VALUES ('run_01a2344e5c51d8d25f57870f', 1, 'run_created', 1800000000, '{"at":"2027-01-15T08:00:00.000000Z","data":{"by":"ops","contract_sha256":"b95ca1734cd6c0062d7840da4dae87f0323f274026906bd33b3d04e8ffb1bc7d","deadline":"2027-01-18T08:00:00.000000Z","lineage_id":"lin_01a2344e5c51ca742d28f1f5","spec_version":"v1","tenant":"acme"},"run_id":"run_01a2344e5c51d8d25f57870f","seq":1,"type":"run_created","v":1}', '0000000000000000000000000000000000000000000000000000000000000000', '8ac3be01adc3d02cf136a722c3c76e2a3be36cfdfd344169e58c6c324d05b341');
INSERT INTO public.events (run_id, seq, type, at, body, prev_hash, hash) VALUES ('run_01a2344e5c51d8d25f57870f', 4, 'action_settled', 1800000000, '{"at":"2027-01-15T08:00:00.000000Z","data":{"action_id":"act_01a2344e5c57df33b56142c7","actual_spend":"0.00","code":null,"previous":"admitted","receipt":{"digest":"d81c949e32774601f61f489a963e555464a02b1612f7d7e51742ee645e3c46ba","id":"obj-7"},"result_sha256":"5102508293774a8c5ef17b3410a0fed3c3f00baf3435a350bac38efabf879793","sent":true,"status":"succeeded"},"run_id":"run_01a2344e5c51d8d25f57870f","seq":4,"type":"action_settled","v":1}', 'd12633296f0a3e4a8fc8e2684baae11cd9fdb3d19fbb636acc8bb7ad66101dce', '72ec3f6251d0c46c666140241403511dd93b1c129fcb8697ef8825c9b45a3072');
INSERT INTO public.events (run_id, seq, type, at, body, prev_hash, hash) VALUES ('run_01a2344e5be2c2b5ba96f56d', 29, 'run_cancelled', 1800000060, '{"at":"2027-01-15T08:01:00.000000Z","data":{"by":"ops","hard":false,"previous":"running","reason":"stop"},"run_id":"run_01a2344e5be2c2b5ba96f56d","seq":29,"type":"run_cancelled","v":1}', '7f47665d61724c39c20de2bf4efae6dc86ac8201485db285ee9c41ff610f9f49', 'deb1fe5927d627cea9979c886de4564bea0cd4ed18e34b537ab42de4d5463479');
INSERT INTO public.events (run_id, seq, type, at, body, prev_hash, hash) VALUES ('run_01a2344e5be2c2b5ba96f56d', 28, 'bodies_purged', 1800000060, '{"at":"2027-01-15T08:01:00.000000Z","data":{"actions":["act_01a2344e5bfa27bfceebc6b0","act_01a2344e5c000dbbde74d8de","act_01a2344e5c046b583b298149","act_01a2344e5c1d11a241b4a3d6","act_01a2344e5c2fe5d68eb6d88f","act_01a2344e5c31822e743e3c86","act_01a2344e5c3fb5b24c60af5d"],"bodies":["29eb413324469b49234b9c8fa468e4c69719ba9bd9a41333c56d802057f71d99","2efbf0f39fc4eb35f04aba171f63e554bb7e8023d4a5170d55bcb4f9e276ec2f","6d2162a2ed59c02c76be961d42fa48b99c41293563f17b7543156b730a557fce","9187f366687fa85cb47662244d05c4de581585aa82af61d51808b4932e941865","9c3da1c9aaac3284d1b604ebc733b2150e94c251038dfaa8614b3adb201ee1da","9ccd97529d78db316d988c9a744fcac498730ce33da7b00409df1d94d1acaf51","a6ed1c596ebafc4723b8c295c4ebe7e062c014debf0d341251bf5fb92d26b229","b4c73d1ce94ba8e327d8b4fb229327187727fa3b33eb341ea913a7352efad640","cc38fdec7c294381078282f2ae7ec858a16f70ee29b5def0334d3205c24dcc11","d0285d92ec906f0dbddbc099d317215e993e1477198942dd78a1451b5b7dd010"],"by":"ops","reason":"retention"},"run_id":"run_01a2344e5be2c2b5ba96f56d","seq":28,"type":"bodies_purged","v":1}', '33bd4eed5aa8225afb0add18015f703c787d789ed9b036e0d6588774afb5362b', '7f47665d61724c39c20de2bf4efae6dc86ac8201485db285ee9c41ff610f9f49');
INSERT INTO public.events (run_id, seq, type, at, body, prev_hash, hash) VALUES ('run_01a2344e5c64cf1df6bbde3f', 1, 'run_created', 1800000060, '{"at":"2027-01-15T08:01:00.000000Z","data":{"by":"ops","contract_sha256":"16c3e04908b51822ce40bb392b8aed8de8d7fbaa8c20c19cd64c627dd7de8c42","deadline":"2027-01-18T08:00:00.000000Z","extend_by":null,"lineage_id":"lin_01a2344e5be21d52b97b749d","predecessor_run_id":"run_01a2344e5be2c2b5ba96f56d","reason":"carry on","spec_version":"v1","tenant":"acme"},"run_id":"run_01a2344e5c64cf1df6bbde3f","seq":1,"type":"run_created","v":1}', '0000000000000000000000000000000000000000000000000000000000000000', '125c783fa84e133e406c565acddfb65c8e0fe8bf5c4ce0ceb633d6ff6729ae95');
INSERT INTO public.events (run_id, seq, type, at, body, prev_hash, hash) VALUES ('run_01a2344e5be2c2b5ba96f56d', 30, 'successor_created', 1800000060, '{"at":"2027-01-15T08:01:00.000000Z","data":{"by":"ops","extend_by":null,"reason":"carry on","successor_run_id":"run_01a2344e5c64cf1df6bbde3f"},"run_id":"run_01a2344e5be2c2b5ba96f56d","seq":30,"type":"successor_created","v":1}', 'deb1fe5927d627cea9979c886de4564bea0cd4ed18e34b537ab42de4d5463479', 'da6040617697e9b1ecb671191a1ae03bb66fab048fc4d492b7b6537decb9e555');


--
-- Data for Name: key_events; Type: TABLE DATA; Schema: public; Owner: -
--



--
-- Data for Name: leases; Type: TABLE DATA; Schema: public; Owner: -
--

INSERT INTO public.leases (token_hash, run_id, epoch, worker, granted_by, granted_at, granted_key_id) VALUES ('658b06bb11101f68a0e2f22e33e837dec1475596ca39174f4eb1c3d53fb5666f', 'run_01a2344e5be2c2b5ba96f56d', 1, 'worker-1', 'ops', 1800000000, NULL);
INSERT INTO public.leases (token_hash, run_id, epoch, worker, granted_by, granted_at, granted_key_id) VALUES ('512fa19508ff8f733c18c9077f81c7a2fe8cb60bb6d57ab22b89456977610999', 'run_01a2344e5be2c2b5ba96f56d', 2, 'worker-2', 'ops', 1800000000, NULL);
INSERT INTO public.leases (token_hash, run_id, epoch, worker, granted_by, granted_at, granted_key_id) VALUES ('9a309164e4d18a57fe93c6f0ef197bb7d15ce435c11f26f3e76a1447c64195cf', 'run_01a2344e5c434db377cc20d7', 1, 'child-worker', 'ops', 1800000000, NULL);
INSERT INTO public.leases (token_hash, run_id, epoch, worker, granted_by, granted_at, granted_key_id) VALUES ('8c7fe8486877793a8bddbcbb5feafa47a53f1a178ef51e9a3225d487ee4af403', 'run_01a2344e5c51d8d25f57870f', 1, 'worker-1', 'ops', 1800000000, NULL);


--
-- Data for Name: milestones; Type: TABLE DATA; Schema: public; Owner: -
--



--
-- Data for Name: rate_limits; Type: TABLE DATA; Schema: public; Owner: -
--

INSERT INTO public.rate_limits (scope, tat) VALUES ('refusals:run_01a2344e5be2c2b5ba96f56d:1', 1800000000.1);


--
-- Data for Name: tool_pin_adapters; Type: TABLE DATA; Schema: public; Owner: -
--



--
-- Data for Name: tool_pins; Type: TABLE DATA; Schema: public; Owner: -
--



--
-- Data for Name: watch_alerts; Type: TABLE DATA; Schema: public; Owner: -
--



--
-- Data for Name: watch_leases; Type: TABLE DATA; Schema: public; Owner: -
--



--
-- Data for Name: webhook_deliveries; Type: TABLE DATA; Schema: public; Owner: -
--



--
-- Name: actions_seq_seq; Type: SEQUENCE SET; Schema: public; Owner: -
--

SELECT pg_catalog.setval('public.actions_seq_seq', 9, true);


--
-- Name: api_keys_seq_seq; Type: SEQUENCE SET; Schema: public; Owner: -
--

SELECT pg_catalog.setval('public.api_keys_seq_seq', 1, false);


--
-- Name: approvals_seq_seq; Type: SEQUENCE SET; Schema: public; Owner: -
--

SELECT pg_catalog.setval('public.approvals_seq_seq', 2, true);


--
-- Name: charges_seq_seq; Type: SEQUENCE SET; Schema: public; Owner: -
--

SELECT pg_catalog.setval('public.charges_seq_seq', 1, true);


--
-- Name: checkpoints_seq_seq; Type: SEQUENCE SET; Schema: public; Owner: -
--

SELECT pg_catalog.setval('public.checkpoints_seq_seq', 1, false);


--
-- Name: key_events_seq_seq; Type: SEQUENCE SET; Schema: public; Owner: -
--

SELECT pg_catalog.setval('public.key_events_seq_seq', 1, false);


--
-- Name: runs_seq_seq; Type: SEQUENCE SET; Schema: public; Owner: -
--

SELECT pg_catalog.setval('public.runs_seq_seq', 4, true);


--
-- Name: watch_alerts_seq_seq; Type: SEQUENCE SET; Schema: public; Owner: -
--

SELECT pg_catalog.setval('public.watch_alerts_seq_seq', 1, false);


--
-- Name: webhook_deliveries_seq_seq; Type: SEQUENCE SET; Schema: public; Owner: -
--

SELECT pg_catalog.setval('public.webhook_deliveries_seq_seq', 1, false);


--
-- PostgreSQL database dump complete
--


