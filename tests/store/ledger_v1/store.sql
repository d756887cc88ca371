BEGIN TRANSACTION;
CREATE TABLE actions (
    seq               INTEGER PRIMARY KEY,
    action_id         TEXT NOT NULL UNIQUE,
    run_id            TEXT NOT NULL REFERENCES runs (run_id),
    tenant            TEXT NOT NULL,
    lineage_id        TEXT NOT NULL,
    tool              TEXT NOT NULL,
    effect            TEXT NOT NULL,                          
    operation_id      TEXT,                                   
    payload_sha256    TEXT NOT NULL,
    idempotency_key   TEXT,
    status            TEXT NOT NULL,
    code              TEXT,
    reason            TEXT,
    epoch             INTEGER,
    worker            TEXT,
    approval_id       TEXT,
    repeat_of         TEXT,
    reserved_spend    INTEGER NOT NULL DEFAULT 0,
    reserved_calls    INTEGER NOT NULL DEFAULT 0,
    reserved_writes   INTEGER NOT NULL DEFAULT 0,
    actual_spend      INTEGER,
    receipt           TEXT,                                   
    result_sha256     TEXT,                                   
    process_id        TEXT,                                   
    created_at        REAL NOT NULL,
    settled_at        REAL
, acknowledged TEXT, bodies_purged_at REAL);
INSERT INTO "actions" VALUES(1,'act_01a2342903389d0960cdea5d','run_01a23429032512d4d301cebc','acme','lin_01a234290325a176f12c3370','t__write','write','op_6296eb21d2ef9fd2479c47fdbc884d8a4babf328','a6ed1c596ebafc4723b8c295c4ebe7e062c014debf0d341251bf5fb92d26b229','wk_fhw3vb3sikrsaw5lx4kpgweqgperbkoys6djocs4ghmmpfmzgwwq','succeeded',NULL,NULL,1,'worker-1',NULL,NULL,0,1,1,0,'{"digest": "a300bad6a9e51c8b508dd57fffdaef8b9236560e17010cbcaa8980529aa53cb2", "id": "obj-1"}','9c3da1c9aaac3284d1b604ebc733b2150e94c251038dfaa8614b3adb201ee1da','test-gateway',1800000000.0,1800000000.0,NULL,1800000060.0);
INSERT INTO "actions" VALUES(2,'act_01a23429033be25ab2cd8ee6','run_01a23429032512d4d301cebc','acme','lin_01a234290325a176f12c3370','t__read','read',NULL,'b4c73d1ce94ba8e327d8b4fb229327187727fa3b33eb341ea913a7352efad640',NULL,'succeeded',NULL,NULL,1,'worker-1',NULL,NULL,0,1,0,0,'{"digest": "a2ed65c2d99dff6cdfceba7cfbe133cea08a7dbda349448cbbb13fa6a088df63", "id": "obj-2"}',NULL,'test-gateway',1800000000.0,1800000000.0,NULL,1800000060.0);
INSERT INTO "actions" VALUES(3,'act_01a23429033c619a174cc549','run_01a23429032512d4d301cebc','acme','lin_01a234290325a176f12c3370','t__paid','write','op_3230d8d435e7ea251b4d22ede6b2eb24ea86aa9d','cc38fdec7c294381078282f2ae7ec858a16f70ee29b5def0334d3205c24dcc11','wk_mzbdy3cvrdvuitewyidmn4lc4ioomrazqvd6o3jdqxtdxfohdlva','succeeded',NULL,NULL,1,'worker-1',NULL,NULL,10,1,1,5,'{"digest": "a6aa61a82edd8eab32a30ea44555847893aa017b511aa303a5b07a9113dc6675", "id": "obj-3"}','9187f366687fa85cb47662244d05c4de581585aa82af61d51808b4932e941865','test-gateway',1800000000.0,1800000000.0,NULL,1800000060.0);
INSERT INTO "actions" VALUES(4,'act_01a234290348a917c6608fc3','run_01a23429032512d4d301cebc','acme','lin_01a234290325a176f12c3370','t__approve','write','op_2a2ffe905b2a32bac06636c2a28663cbc409ca8f','29eb413324469b49234b9c8fa468e4c69719ba9bd9a41333c56d802057f71d99','wk_qjrhmrdm3qt7wk6xdmmcc6xmn4d6kyorjorwm2cst4fogk5pg3ga','succeeded',NULL,NULL,1,'worker-1','apr_01a23429033eb4aea40b9f89',NULL,0,1,1,0,'{"digest": "8b1b021de87736b58c36038ba452daaa1836fcf7a6a7d7040370f5f644d08d86", "id": "obj-4"}','6d2162a2ed59c02c76be961d42fa48b99c41293563f17b7543156b730a557fce','test-gateway',1800000000.0,1800000000.0,NULL,1800000060.0);
INSERT INTO "actions" VALUES(5,'act_01a23429034e3dcf3463366c','run_01a23429032512d4d301cebc','acme','lin_01a234290325a176f12c3370','t__denied','unknown',NULL,'44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a',NULL,'rejected','forbidden','this run''s contract does not allow t__denied',1,'worker-1',NULL,NULL,0,0,0,NULL,NULL,NULL,NULL,1800000000.0,1800000000.0,NULL,1800000060.0);
INSERT INTO "actions" VALUES(6,'act_01a23429034fd60e4035156c','run_01a23429032512d4d301cebc','acme','lin_01a234290325a176f12c3370','t__write','write','op_b891742b404248908108948656f35b31e3639e30','9ccd97529d78db316d988c9a744fcac498730ce33da7b00409df1d94d1acaf51','wk_q34ehcldjkuoncdzn3g2xf3iltpr37ltp3e63u2qqz3opa5xcl4q','succeeded',NULL,'looked it up',1,'worker-1',NULL,NULL,0,1,1,0,NULL,NULL,'test-gateway',1800000000.0,1800000000.0,NULL,1800000060.0);
INSERT INTO "actions" VALUES(7,'act_01a2342903573ee9b30d2247','run_01a23429032512d4d301cebc','acme','lin_01a234290325a176f12c3370','t__write','write','op_b2d09386a2653ef69c5cde50bffea1831ae40d24','d0285d92ec906f0dbddbc099d317215e993e1477198942dd78a1451b5b7dd010','wk_enuhu7knzxhozijjdvfkajjegeieeprevv5er5vblujam7ppokma','succeeded',NULL,NULL,2,'worker-2',NULL,NULL,0,1,1,0,'{"digest": "88a8e71dd303b75ae53261d25854a799fff21a54ad6a020e2502cc1d1547c48d", "id": "obj-5"}','2efbf0f39fc4eb35f04aba171f63e554bb7e8023d4a5170d55bcb4f9e276ec2f','test-gateway',1800000000.0,1800000000.0,NULL,1800000060.0);
INSERT INTO "actions" VALUES(8,'act_01a23429035d4f956f42fa29','run_01a23429035ac50cbcb3075e','acme','lin_01a23429035ab3baf5540c14','t__write','write','op_26472dc02c9fce2ef9ffdfbfdb1256de11643161','8c46aa13c9604f844a6197a713629f461ff39b0a7edf46e44085876d8718e5e5','wk_rylkhuzgizct4gjfwbwe6zqosdxdnih36wpmbcsy7u33ogngd54a','succeeded',NULL,NULL,1,'child-worker',NULL,NULL,0,1,1,0,'{"digest": "c94609173315e6566d9c41c971ee07afb454a68b7e57c9ecad03a916861b6009", "id": "obj-6"}','d5e4fe643091055287c5f1e48eae4e826c87ee86a23fd65096f166e30aed7a27','test-gateway',1800000000.0,1800000000.0,NULL,NULL);
INSERT INTO "actions" VALUES(9,'act_01a23429036528e1ea2689a8','run_01a234290362f82081ddd46a','acme','lin_01a234290362c6fe6dee82f7','t__write','write','op_13e622a4be5be0bd5510511969e89773ab3a032c','e00e9e7b184275cb2043898af04317cef74ccef59db3058dc216ff299f5c1210','wk_kbu62p4dvgbjnbga2vu26ujfwvpvhcht5yza6j2qmgnq7a7n7l4a','succeeded',NULL,NULL,1,'worker-1',NULL,NULL,0,1,1,0,'{"digest": "d81c949e32774601f61f489a963e555464a02b1612f7d7e51742ee645e3c46ba", "id": "obj-7"}','5102508293774a8c5ef17b3410a0fed3c3f00baf3435a350bac38efabf879793','test-gateway',1800000000.0,1800000000.0,NULL,NULL);
CREATE TABLE api_keys (
    seq           INTEGER PRIMARY KEY,                      
    key_id        TEXT NOT NULL UNIQUE,
    tenant        TEXT NOT NULL,
    name          TEXT NOT NULL,                            
    roles         TEXT NOT NULL,                            
    key_sha256    TEXT NOT NULL UNIQUE,                     
    created_at    REAL NOT NULL,
    created_by    TEXT NOT NULL,
    expires_at    REAL,                                     
    revoked_at    REAL,
    revoked_by    TEXT,
    rotated_from  TEXT,                                     
    rotated_to    TEXT                                      
);
CREATE TABLE approvals (
    seq               INTEGER PRIMARY KEY,
    approval_id       TEXT NOT NULL UNIQUE,
    run_id            TEXT NOT NULL REFERENCES runs (run_id),
    tenant            TEXT NOT NULL,
    tool              TEXT NOT NULL,
    payload_sha256    TEXT NOT NULL,
    spec_version      TEXT NOT NULL,
    tool_def_sha256   TEXT NOT NULL,
    status            TEXT NOT NULL,                          
    role              TEXT NOT NULL,
    on_expiry         TEXT NOT NULL,
    valid_for         REAL NOT NULL,
    requested_by      TEXT NOT NULL,
    evidence          TEXT,
    rationale         TEXT,
    created_at        REAL NOT NULL,
    decide_by         REAL NOT NULL,
    valid_until       REAL,
    decided_by        TEXT,
    decided_at        REAL,
    note              TEXT,
    action_id         TEXT
, reviewer TEXT, milestone_id TEXT);
INSERT INTO "approvals" VALUES(1,'apr_01a23429033eb4aea40b9f89','run_01a23429032512d4d301cebc','acme','t__approve','29eb413324469b49234b9c8fa468e4c69719ba9bd9a41333c56d802057f71d99','v1','8ff81c9094b9344dd75f9bb6a9fa9792a806de06a3b82ec62fab3063aa59dbee','used','approver','pause',60.0,'ops',NULL,NULL,1800000000.0,1800000120.0,1800000060.0,'ana',1800000000.0,NULL,'act_01a234290348a917c6608fc3',NULL,NULL);
INSERT INTO "approvals" VALUES(2,'apr_01a23429034cf335fc4717b3','run_01a23429032512d4d301cebc','acme','t__approve','8f1b831e62d3ac6d42f5a547a10d623d0cbd44c8cb6f6e46e406a3b6335c0770','v1','8ff81c9094b9344dd75f9bb6a9fa9792a806de06a3b82ec62fab3063aa59dbee','denied','approver','pause',60.0,'ops',NULL,NULL,1800000000.0,1800000120.0,NULL,'ana',1800000000.0,NULL,NULL,NULL,NULL);
CREATE TABLE blobs (
    sha256      TEXT PRIMARY KEY,
    body        BLOB NOT NULL,
    created_at  REAL NOT NULL
);
INSERT INTO "blobs" VALUES('b95ca1734cd6c0062d7840da4dae87f0323f274026906bd33b3d04e8ffb1bc7d',X'7B22617070726F76616C73223A5B5D2C22617574686F72697479223A7B22616C6C6F77223A5B22745F5F2A225D2C22636F6E73747261696E7473223A7B22745F5F636F6E73747261696E6564223A22617267732E746F2E656E64735769746828274061636D652E6578616D706C652729227D2C2264656E79223A5B22745F5F64656E696564225D7D2C2262756467657473223A7B226163746976655F7365636F6E6473223A3130303030302C22636F756E745F77616974696E67223A66616C73652C227370656E64223A223130302E3030222C22746F6F6C5F63616C6C73223A313030302C22777269746573223A3130307D2C2263757272656E6379223A22555344222C22657870697265735F696E223A22373268222C22666F726269645F63726561746F725F617070726F76616C223A66616C73652C22676F616C223A226578657263697365207468652067617465222C226C656173655F74746C223A22356D222C226D696C6573746F6E6573223A5B5D2C226F776E6572223A226F70734061636D652E6578616D706C65222C2270726F67726573735F6578706563746174696F6E223A6E756C6C2C22737065635F76657273696F6E223A227631222C22776F726B657273223A5B5D7D',1800000000.0);
INSERT INTO "blobs" VALUES('8f1b831e62d3ac6d42f5a547a10d623d0cbd44c8cb6f6e46e406a3b6335c0770',X'7B2274657874223A226E6F227D',1800000000.0);
INSERT INTO "blobs" VALUES('bde4ff2b4fb528c9b70c6506881d7aad0d360a54a145fea6620f298ac9313b58',X'7B22617070726F76616C73223A5B5D2C22617574686F72697479223A7B22616C6C6F77223A5B22745F5F7772697465222C22745F5F72656164225D2C22636F6E73747261696E7473223A7B22745F5F636F6E73747261696E6564223A22617267732E746F2E656E64735769746828274061636D652E6578616D706C652729227D2C2264656E79223A5B22745F5F64656E696564225D7D2C2262756467657473223A7B226163746976655F7365636F6E6473223A333630302C22636F756E745F77616974696E67223A66616C73652C227370656E64223A22312E3030222C22746F6F6C5F63616C6C73223A352C22777269746573223A327D2C2263757272656E6379223A22555344222C22657870697265735F696E223A223168222C22666F726269645F63726561746F725F617070726F76616C223A66616C73652C22676F616C223A22612070617274222C226C656173655F74746C223A22356D222C226D696C6573746F6E6573223A5B5D2C226F776E6572223A226F70734061636D652E6578616D706C65222C2270726F67726573735F6578706563746174696F6E223A6E756C6C2C22737065635F76657273696F6E223A226331222C22776F726B657273223A5B5D7D',1800000000.0);
INSERT INTO "blobs" VALUES('8c46aa13c9604f844a6197a713629f461ff39b0a7edf46e44085876d8718e5e5',X'7B2274657874223A226368696C64227D',1800000000.0);
INSERT INTO "blobs" VALUES('d5e4fe643091055287c5f1e48eae4e826c87ee86a23fd65096f166e30aed7a27',X'7B22636F6E74656E74223A5B7B2274657874223A227B5C2269645C223A205C226F626A2D365C222C205C22746F6F6C5C223A205C2277726974655C227D222C2274797065223A2274657874227D5D2C2273747275637475726564223A7B226964223A226F626A2D36222C22746F6F6C223A227772697465227D7D',1800000000.0);
INSERT INTO "blobs" VALUES('e00e9e7b184275cb2043898af04317cef74ccef59db3058dc216ff299f5c1210',X'7B2274657874223A226F74686572227D',1800000000.0);
INSERT INTO "blobs" VALUES('5102508293774a8c5ef17b3410a0fed3c3f00baf3435a350bac38efabf879793',X'7B22636F6E74656E74223A5B7B2274657874223A227B5C2269645C223A205C226F626A2D375C222C205C22746F6F6C5C223A205C2277726974655C227D222C2274797065223A2274657874227D5D2C2273747275637475726564223A7B226964223A226F626A2D37222C22746F6F6C223A227772697465227D7D',1800000000.0);
INSERT INTO "blobs" VALUES('16c3e04908b51822ce40bb392b8aed8de8d7fbaa8c20c19cd64c627dd7de8c42',X'7B22617070726F76616C73223A5B5D2C22617574686F72697479223A7B22616C6C6F77223A5B22745F5F2A225D2C22636F6E73747261696E7473223A7B22745F5F636F6E73747261696E6564223A22617267732E746F2E656E64735769746828274061636D652E6578616D706C652729227D2C2264656E79223A5B22745F5F64656E696564225D7D2C2262756467657473223A7B226163746976655F7365636F6E6473223A39393934302C22636F756E745F77616974696E67223A66616C73652C227370656E64223A2239392E3838222C22746F6F6C5F63616C6C73223A3939332C22777269746573223A39347D2C2263757272656E6379223A22555344222C22657870697265735F696E223A22373268222C22666F726269645F63726561746F725F617070726F76616C223A66616C73652C22676F616C223A226578657263697365207468652067617465222C226C656173655F74746C223A22356D222C226D696C6573746F6E6573223A5B5D2C226F776E6572223A226F70734061636D652E6578616D706C65222C2270726F67726573735F6578706563746174696F6E223A6E756C6C2C22737065635F76657273696F6E223A227631222C22776F726B657273223A5B5D7D',1800000060.0);
CREATE TABLE charges (
    seq          INTEGER PRIMARY KEY,
    charge_id    TEXT NOT NULL UNIQUE,
    run_id       TEXT NOT NULL REFERENCES runs (run_id),
    tenant       TEXT NOT NULL,
    kind         TEXT NOT NULL,                            
    tag          TEXT NOT NULL,                            
    amount       INTEGER NOT NULL CHECK (amount >= 0),
    note         TEXT,
    ref          TEXT,
    principal    TEXT NOT NULL,                            
    created_at   REAL NOT NULL
);
INSERT INTO "charges" VALUES(1,'chg_01a234290355da7ea9bbea03','run_01a23429032512d4d301cebc','acme','model','model',7,NULL,NULL,'ops',1800000000.0);
CREATE TABLE checkpoints (
    seq             INTEGER PRIMARY KEY,
    run_id          TEXT NOT NULL REFERENCES runs (run_id),
    version         INTEGER NOT NULL,
    epoch           INTEGER NOT NULL,
    worker          TEXT NOT NULL,
    body            TEXT NOT NULL,                            
    body_sha256     TEXT NOT NULL,
    good            INTEGER NOT NULL DEFAULT 1,
    bad_reason      TEXT,
    inherited_from  TEXT,                                     
    created_at      REAL NOT NULL,
    UNIQUE (run_id, version)
);
CREATE TABLE "events" (
    run_id      TEXT NOT NULL,
    seq         INTEGER NOT NULL,
    type        TEXT NOT NULL,
    at          REAL NOT NULL,
    body        TEXT NOT NULL,
    prev_hash   TEXT NOT NULL,
    hash        TEXT NOT NULL,
    PRIMARY KEY (run_id, seq)
) WITHOUT ROWID;
INSERT INTO "events" VALUES('run_01a23429032512d4d301cebc',1,'run_created',1800000000.0,'{"at":"2027-01-15T08:00:00.000000Z","data":{"by":"ops","contract_sha256":"b95ca1734cd6c0062d7840da4dae87f0323f274026906bd33b3d04e8ffb1bc7d","deadline":"2027-01-18T08:00:00.000000Z","lineage_id":"lin_01a234290325a176f12c3370","spec_version":"v1","tenant":"acme"},"run_id":"run_01a23429032512d4d301cebc","seq":1,"type":"run_created","v":1}','0000000000000000000000000000000000000000000000000000000000000000','f16b2d3e189915b75fb53b44f041e673d647c08467c73cfac96764235c8e0b8b');
INSERT INTO "events" VALUES('run_01a23429032512d4d301cebc',2,'lease_granted',1800000000.0,'{"at":"2027-01-15T08:00:00.000000Z","data":{"by":"ops","epoch":1,"previous_worker":null,"takeover":false,"worker":"worker-1"},"run_id":"run_01a23429032512d4d301cebc","seq":2,"type":"lease_granted","v":1}','f16b2d3e189915b75fb53b44f041e673d647c08467c73cfac96764235c8e0b8b','fcc8f6398d460c544b56b584ed596889b2fc3083128668072418c936fc849bdb');
INSERT INTO "events" VALUES('run_01a23429032512d4d301cebc',3,'action_admitted',1800000000.0,'{"at":"2027-01-15T08:00:00.000000Z","data":{"action_id":"act_01a2342903389d0960cdea5d","approval_id":null,"effect":"write","epoch":1,"operation_id":"op_6296eb21d2ef9fd2479c47fdbc884d8a4babf328","payload_sha256":"a6ed1c596ebafc4723b8c295c4ebe7e062c014debf0d341251bf5fb92d26b229","process_id":"test-gateway","repeat_of":null,"reserved":{"spend":"0.00","tool_calls":1,"writes":1},"tool":"t__write","worker":"worker-1"},"run_id":"run_01a23429032512d4d301cebc","seq":3,"type":"action_admitted","v":1}','fcc8f6398d460c544b56b584ed596889b2fc3083128668072418c936fc849bdb','1882fb0aef55ae4a76b70320cc0471d9caf661ac64b42641156b03be3d461602');
INSERT INTO "events" VALUES('run_01a23429032512d4d301cebc',4,'action_settled',1800000000.0,'{"at":"2027-01-15T08:00:00.000000Z","data":{"action_id":"act_01a2342903389d0960cdea5d","actual_spend":"0.00","code":null,"previous":"admitted","receipt":{"digest":"a300bad6a9e51c8b508dd57fffdaef8b9236560e17010cbcaa8980529aa53cb2","id":"obj-1"},"result_sha256":"9c3da1c9aaac3284d1b604ebc733b2150e94c251038dfaa8614b3adb201ee1da","sent":true,"status":"succeeded"},"run_id":"run_01a23429032512d4d301cebc","seq":4,"type":"action_settled","v":1}','1882fb0aef55ae4a76b70320cc0471d9caf661ac64b42641156b03be3d461602','5ed1fdd06e32fd619185b8992311ec999ccd5bb7971e11de825bc4e93f7db76c');
INSERT INTO "events" VALUES('run_01a23429032512d4d301cebc',5,'action_settled',1800000000.0,'{"at":"2027-01-15T08:00:00.000000Z","data":{"action_id":"act_01a23429033be25ab2cd8ee6","actual_spend":"0.00","code":null,"effect":"read","epoch":1,"payload_sha256":"b4c73d1ce94ba8e327d8b4fb229327187727fa3b33eb341ea913a7352efad640","previous":"admitted","process_id":"test-gateway","receipt":{"digest":"a2ed65c2d99dff6cdfceba7cfbe133cea08a7dbda349448cbbb13fa6a088df63","id":"obj-2"},"result_sha256":null,"sent":true,"status":"succeeded","tool":"t__read","worker":"worker-1"},"run_id":"run_01a23429032512d4d301cebc","seq":5,"type":"action_settled","v":1}','5ed1fdd06e32fd619185b8992311ec999ccd5bb7971e11de825bc4e93f7db76c','88b100af520ff28056e74fb3dd500dfec2c34e398084dbe54735b22144ae13f2');
INSERT INTO "events" VALUES('run_01a23429032512d4d301cebc',6,'action_admitted',1800000000.0,'{"at":"2027-01-15T08:00:00.000000Z","data":{"action_id":"act_01a23429033c619a174cc549","approval_id":null,"effect":"write","epoch":1,"operation_id":"op_3230d8d435e7ea251b4d22ede6b2eb24ea86aa9d","payload_sha256":"cc38fdec7c294381078282f2ae7ec858a16f70ee29b5def0334d3205c24dcc11","process_id":"test-gateway","repeat_of":null,"reserved":{"spend":"0.10","tool_calls":1,"writes":1},"tool":"t__paid","worker":"worker-1"},"run_id":"run_01a23429032512d4d301cebc","seq":6,"type":"action_admitted","v":1}','88b100af520ff28056e74fb3dd500dfec2c34e398084dbe54735b22144ae13f2','3afee6eb3fc5b6f207ebed8f8391194f4655c3222f66a82d9313cfc2b1310a2b');
INSERT INTO "events" VALUES('run_01a23429032512d4d301cebc',7,'action_settled',1800000000.0,'{"at":"2027-01-15T08:00:00.000000Z","data":{"action_id":"act_01a23429033c619a174cc549","actual_spend":"0.05","code":null,"previous":"admitted","receipt":{"digest":"a6aa61a82edd8eab32a30ea44555847893aa017b511aa303a5b07a9113dc6675","id":"obj-3"},"result_sha256":"9187f366687fa85cb47662244d05c4de581585aa82af61d51808b4932e941865","sent":true,"status":"succeeded"},"run_id":"run_01a23429032512d4d301cebc","seq":7,"type":"action_settled","v":1}','3afee6eb3fc5b6f207ebed8f8391194f4655c3222f66a82d9313cfc2b1310a2b','5e9886ef3f65227d21975bdbd9a95df05956eddd9a845bd107701f2bc57879f0');
INSERT INTO "events" VALUES('run_01a23429032512d4d301cebc',8,'approval_requested',1800000000.0,'{"at":"2027-01-15T08:00:00.000000Z","data":{"approval_id":"apr_01a23429033eb4aea40b9f89","decide_by":"2027-01-15T08:02:00.000000Z","payload_sha256":"29eb413324469b49234b9c8fa468e4c69719ba9bd9a41333c56d802057f71d99","requested_by":"ops","spec_version":"v1","tool":"t__approve","tool_def_sha256":"8ff81c9094b9344dd75f9bb6a9fa9792a806de06a3b82ec62fab3063aa59dbee"},"run_id":"run_01a23429032512d4d301cebc","seq":8,"type":"approval_requested","v":1}','5e9886ef3f65227d21975bdbd9a95df05956eddd9a845bd107701f2bc57879f0','573daa48862854a20b99839dae2f096ec06bbcffa568c80a788c6f4a51ede32f');
INSERT INTO "events" VALUES('run_01a23429032512d4d301cebc',9,'run_waiting',1800000000.0,'{"at":"2027-01-15T08:00:00.000000Z","data":{"approval_id":"apr_01a23429033eb4aea40b9f89","by":"gateway","previous":"running","reason":"approval apr_01a23429033eb4aea40b9f89 is pending"},"run_id":"run_01a23429032512d4d301cebc","seq":9,"type":"run_waiting","v":1}','573daa48862854a20b99839dae2f096ec06bbcffa568c80a788c6f4a51ede32f','e807060afc8219de8b0b419d03f0aa96574676e8257c0f47a7630eb7f4424ce8');
INSERT INTO "events" VALUES('run_01a23429032512d4d301cebc',10,'approval_approved',1800000000.0,'{"at":"2027-01-15T08:00:00.000000Z","data":{"approval_id":"apr_01a23429033eb4aea40b9f89","by":"ana","note":null,"payload_sha256":"29eb413324469b49234b9c8fa468e4c69719ba9bd9a41333c56d802057f71d99","valid_until":"2027-01-15T08:01:00.000000Z"},"run_id":"run_01a23429032512d4d301cebc","seq":10,"type":"approval_approved","v":1}','e807060afc8219de8b0b419d03f0aa96574676e8257c0f47a7630eb7f4424ce8','059ec0fb7075635ca88f273b793cbcec12305c56787592e38b84675a5e94f1dc');
INSERT INTO "events" VALUES('run_01a23429032512d4d301cebc',11,'run_running',1800000000.0,'{"at":"2027-01-15T08:00:00.000000Z","data":{"by":"ana","previous":"waiting","reason":"no approval pending"},"run_id":"run_01a23429032512d4d301cebc","seq":11,"type":"run_running","v":1}','059ec0fb7075635ca88f273b793cbcec12305c56787592e38b84675a5e94f1dc','3b3a755e09fa9bc13f770148deba9dc489ba3b9dc93e0b4438c24aed119c4b6b');
INSERT INTO "events" VALUES('run_01a23429032512d4d301cebc',12,'action_admitted',1800000000.0,'{"at":"2027-01-15T08:00:00.000000Z","data":{"action_id":"act_01a234290348a917c6608fc3","approval_id":"apr_01a23429033eb4aea40b9f89","effect":"write","epoch":1,"operation_id":"op_2a2ffe905b2a32bac06636c2a28663cbc409ca8f","payload_sha256":"29eb413324469b49234b9c8fa468e4c69719ba9bd9a41333c56d802057f71d99","process_id":"test-gateway","repeat_of":null,"reserved":{"spend":"0.00","tool_calls":1,"writes":1},"tool":"t__approve","worker":"worker-1"},"run_id":"run_01a23429032512d4d301cebc","seq":12,"type":"action_admitted","v":1}','3b3a755e09fa9bc13f770148deba9dc489ba3b9dc93e0b4438c24aed119c4b6b','f56c36af7091c3e994b2ced71130d98c3a7f7830b82f39635c4090d0a975aea3');
INSERT INTO "events" VALUES('run_01a23429032512d4d301cebc',13,'action_settled',1800000000.0,'{"at":"2027-01-15T08:00:00.000000Z","data":{"action_id":"act_01a234290348a917c6608fc3","actual_spend":"0.00","code":null,"previous":"admitted","receipt":{"digest":"8b1b021de87736b58c36038ba452daaa1836fcf7a6a7d7040370f5f644d08d86","id":"obj-4"},"result_sha256":"6d2162a2ed59c02c76be961d42fa48b99c41293563f17b7543156b730a557fce","sent":true,"status":"succeeded"},"run_id":"run_01a23429032512d4d301cebc","seq":13,"type":"action_settled","v":1}','f56c36af7091c3e994b2ced71130d98c3a7f7830b82f39635c4090d0a975aea3','9b4277bb8c86057ee438ebb30d219d027ddaaebcf34d7128d80ac92e6430d5c1');
INSERT INTO "events" VALUES('run_01a23429032512d4d301cebc',14,'approval_requested',1800000000.0,'{"at":"2027-01-15T08:00:00.000000Z","data":{"approval_id":"apr_01a23429034cf335fc4717b3","decide_by":"2027-01-15T08:02:00.000000Z","payload_sha256":"8f1b831e62d3ac6d42f5a547a10d623d0cbd44c8cb6f6e46e406a3b6335c0770","requested_by":"ops","spec_version":"v1","tool":"t__approve","tool_def_sha256":"8ff81c9094b9344dd75f9bb6a9fa9792a806de06a3b82ec62fab3063aa59dbee"},"run_id":"run_01a23429032512d4d301cebc","seq":14,"type":"approval_requested","v":1}','9b4277bb8c86057ee438ebb30d219d027ddaaebcf34d7128d80ac92e6430d5c1','cc8ce86025a317f92a0737d68a99c98307effe21a54504e09497c190706bafc0');
INSERT INTO "events" VALUES('run_01a23429032512d4d301cebc',15,'run_waiting',1800000000.0,'{"at":"2027-01-15T08:00:00.000000Z","data":{"approval_id":"apr_01a23429034cf335fc4717b3","by":"gateway","previous":"running","reason":"approval apr_01a23429034cf335fc4717b3 is pending"},"run_id":"run_01a23429032512d4d301cebc","seq":15,"type":"run_waiting","v":1}','cc8ce86025a317f92a0737d68a99c98307effe21a54504e09497c190706bafc0','6978fb9c0fd90222a57097069edd326d760f54aa9bbb6662f74540a52d9e2ff4');
INSERT INTO "events" VALUES('run_01a23429032512d4d301cebc',16,'approval_denied',1800000000.0,'{"at":"2027-01-15T08:00:00.000000Z","data":{"approval_id":"apr_01a23429034cf335fc4717b3","by":"ana","note":null,"payload_sha256":"8f1b831e62d3ac6d42f5a547a10d623d0cbd44c8cb6f6e46e406a3b6335c0770","valid_until":null},"run_id":"run_01a23429032512d4d301cebc","seq":16,"type":"approval_denied","v":1}','6978fb9c0fd90222a57097069edd326d760f54aa9bbb6662f74540a52d9e2ff4','8d6412d3c72f7457b97e2a9db5cff268385171a8a88c853ce4e2054b1e6901d2');
INSERT INTO "events" VALUES('run_01a23429032512d4d301cebc',17,'run_running',1800000000.0,'{"at":"2027-01-15T08:00:00.000000Z","data":{"by":"ana","previous":"waiting","reason":"no approval pending"},"run_id":"run_01a23429032512d4d301cebc","seq":17,"type":"run_running","v":1}','8d6412d3c72f7457b97e2a9db5cff268385171a8a88c853ce4e2054b1e6901d2','9deeee28ed9775b53bedb9c815e9d463c28272f9919392b4d55dd9eebc08f8c7');
INSERT INTO "events" VALUES('run_01a23429032512d4d301cebc',18,'action_rejected',1800000000.0,'{"at":"2027-01-15T08:00:00.000000Z","data":{"action_id":"act_01a23429034e3dcf3463366c","code":"forbidden","epoch":1,"payload_sha256":"44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a","tool":"t__denied","worker":"worker-1"},"run_id":"run_01a23429032512d4d301cebc","seq":18,"type":"action_rejected","v":1}','9deeee28ed9775b53bedb9c815e9d463c28272f9919392b4d55dd9eebc08f8c7','ababec065928b7c9b3a832e0f33706b34bd9d39ce844dd7c36f95c369474a655');
INSERT INTO "events" VALUES('run_01a23429032512d4d301cebc',19,'action_admitted',1800000000.0,'{"at":"2027-01-15T08:00:00.000000Z","data":{"action_id":"act_01a23429034fd60e4035156c","approval_id":null,"effect":"write","epoch":1,"operation_id":"op_b891742b404248908108948656f35b31e3639e30","payload_sha256":"9ccd97529d78db316d988c9a744fcac498730ce33da7b00409df1d94d1acaf51","process_id":"test-gateway","repeat_of":null,"reserved":{"spend":"0.00","tool_calls":1,"writes":1},"tool":"t__write","worker":"worker-1"},"run_id":"run_01a23429032512d4d301cebc","seq":19,"type":"action_admitted","v":1}','ababec065928b7c9b3a832e0f33706b34bd9d39ce844dd7c36f95c369474a655','92c1966eff49bc75946fe7bad97915f6c8663402f4f175cfa605fd8e226cab31');
INSERT INTO "events" VALUES('run_01a23429032512d4d301cebc',20,'action_settled',1800000000.0,'{"at":"2027-01-15T08:00:00.000000Z","data":{"action_id":"act_01a23429034fd60e4035156c","actual_spend":null,"code":"outcome_unknown","previous":"admitted","reason":"the adapter failed unexpectedly","receipt":null,"result_sha256":null,"sent":true,"status":"unknown"},"run_id":"run_01a23429032512d4d301cebc","seq":20,"type":"action_settled","v":1}','92c1966eff49bc75946fe7bad97915f6c8663402f4f175cfa605fd8e226cab31','3c137e5674eafa5554ff0d79c07af719f8d6e7fe842eaabf519c906a6102f31e');
INSERT INTO "events" VALUES('run_01a23429032512d4d301cebc',21,'action_settled',1800000000.0,'{"at":"2027-01-15T08:00:00.000000Z","data":{"action_id":"act_01a23429034fd60e4035156c","actual_spend":"0.00","code":null,"previous":"unknown","receipt":null,"result_sha256":null,"sent":true,"status":"succeeded"},"run_id":"run_01a23429032512d4d301cebc","seq":21,"type":"action_settled","v":1}','3c137e5674eafa5554ff0d79c07af719f8d6e7fe842eaabf519c906a6102f31e','d09830484240ed17831b48342f4c830854ff5a899b08a3136982dde1b25acf4b');
INSERT INTO "events" VALUES('run_01a23429032512d4d301cebc',22,'usage_reported',1800000000.0,'{"at":"2027-01-15T08:00:00.000000Z","data":{"amount":"0.07","by":"ops","charge_id":"chg_01a234290355da7ea9bbea03","kind":"model","note":null,"ref":null,"tag":"model"},"run_id":"run_01a23429032512d4d301cebc","seq":22,"type":"usage_reported","v":1}','d09830484240ed17831b48342f4c830854ff5a899b08a3136982dde1b25acf4b','60374500655e7bc3e2b3a4c90ad6500b91e33b05c3a7c86b754502b906424c30');
INSERT INTO "events" VALUES('run_01a23429032512d4d301cebc',23,'lease_granted',1800000000.0,'{"at":"2027-01-15T08:00:00.000000Z","data":{"by":"ops","epoch":2,"previous_worker":"worker-1","takeover":true,"worker":"worker-2"},"run_id":"run_01a23429032512d4d301cebc","seq":23,"type":"lease_granted","v":1}','60374500655e7bc3e2b3a4c90ad6500b91e33b05c3a7c86b754502b906424c30','b2309f396ef8a01148a4d5e5b00d6ec98be02174404bac15971660fcc4f48ca4');
INSERT INTO "events" VALUES('run_01a23429032512d4d301cebc',24,'action_admitted',1800000000.0,'{"at":"2027-01-15T08:00:00.000000Z","data":{"action_id":"act_01a2342903573ee9b30d2247","approval_id":null,"effect":"write","epoch":2,"operation_id":"op_b2d09386a2653ef69c5cde50bffea1831ae40d24","payload_sha256":"d0285d92ec906f0dbddbc099d317215e993e1477198942dd78a1451b5b7dd010","process_id":"test-gateway","repeat_of":null,"reserved":{"spend":"0.00","tool_calls":1,"writes":1},"tool":"t__write","worker":"worker-2"},"run_id":"run_01a23429032512d4d301cebc","seq":24,"type":"action_admitted","v":1}','b2309f396ef8a01148a4d5e5b00d6ec98be02174404bac15971660fcc4f48ca4','20b2375611bf824d93ab4392261760b01c9325a72245d58ebaba905dc1566c80');
INSERT INTO "events" VALUES('run_01a23429032512d4d301cebc',25,'action_settled',1800000000.0,'{"at":"2027-01-15T08:00:00.000000Z","data":{"action_id":"act_01a2342903573ee9b30d2247","actual_spend":"0.00","code":null,"previous":"admitted","receipt":{"digest":"88a8e71dd303b75ae53261d25854a799fff21a54ad6a020e2502cc1d1547c48d","id":"obj-5"},"result_sha256":"2efbf0f39fc4eb35f04aba171f63e554bb7e8023d4a5170d55bcb4f9e276ec2f","sent":true,"status":"succeeded"},"run_id":"run_01a23429032512d4d301cebc","seq":25,"type":"action_settled","v":1}','20b2375611bf824d93ab4392261760b01c9325a72245d58ebaba905dc1566c80','9cf8219e35900f2faf69ef2106da6c17596fab44a1f7e0e2e04497ff96fa7473');
INSERT INTO "events" VALUES('run_01a23429032512d4d301cebc',26,'child_created',1800000000.0,'{"at":"2027-01-15T08:00:00.000000Z","data":{"by":"ops","carved":{"spend":"1.00","tool_calls":5,"writes":2},"child_run_id":"run_01a23429035ac50cbcb3075e","clamped":false},"run_id":"run_01a23429032512d4d301cebc","seq":26,"type":"child_created","v":1}','9cf8219e35900f2faf69ef2106da6c17596fab44a1f7e0e2e04497ff96fa7473','36f7053fe02070a9f44e34ab099dbd32c01c78d19efc5707950c7b72299b43d7');
INSERT INTO "events" VALUES('run_01a23429032512d4d301cebc',27,'child_ended',1800000000.0,'{"at":"2027-01-15T08:00:00.000000Z","data":{"child_run_id":"run_01a23429035ac50cbcb3075e","reserved":{"spend":"0.00","tool_calls":0,"writes":0},"returned":{"spend":"1.00","tool_calls":4,"writes":1},"spent":{"spend":"0.00","tool_calls":1,"writes":1},"status":"cancelled"},"run_id":"run_01a23429032512d4d301cebc","seq":27,"type":"child_ended","v":1}','36f7053fe02070a9f44e34ab099dbd32c01c78d19efc5707950c7b72299b43d7','cf2b39686565be8400df8e8b1fd643a033a7454ce4703e80cdd94429656367ea');
INSERT INTO "events" VALUES('run_01a23429032512d4d301cebc',28,'bodies_purged',1800000060.0,'{"at":"2027-01-15T08:01:00.000000Z","data":{"actions":["act_01a2342903389d0960cdea5d","act_01a23429033be25ab2cd8ee6","act_01a23429033c619a174cc549","act_01a234290348a917c6608fc3","act_01a23429034e3dcf3463366c","act_01a23429034fd60e4035156c","act_01a2342903573ee9b30d2247"],"bodies":["29eb413324469b49234b9c8fa468e4c69719ba9bd9a41333c56d802057f71d99","2efbf0f39fc4eb35f04aba171f63e554bb7e8023d4a5170d55bcb4f9e276ec2f","6d2162a2ed59c02c76be961d42fa48b99c41293563f17b7543156b730a557fce","9187f366687fa85cb47662244d05c4de581585aa82af61d51808b4932e941865","9c3da1c9aaac3284d1b604ebc733b2150e94c251038dfaa8614b3adb201ee1da","9ccd97529d78db316d988c9a744fcac498730ce33da7b00409df1d94d1acaf51","a6ed1c596ebafc4723b8c295c4ebe7e062c014debf0d341251bf5fb92d26b229","b4c73d1ce94ba8e327d8b4fb229327187727fa3b33eb341ea913a7352efad640","cc38fdec7c294381078282f2ae7ec858a16f70ee29b5def0334d3205c24dcc11","d0285d92ec906f0dbddbc099d317215e993e1477198942dd78a1451b5b7dd010"],"by":"ops","reason":"retention"},"run_id":"run_01a23429032512d4d301cebc","seq":28,"type":"bodies_purged","v":1}','cf2b39686565be8400df8e8b1fd643a033a7454ce4703e80cdd94429656367ea','7216440bafd7f54ea230747862f09769b7b2e1fba881552d362cb8364eb6a13a');
INSERT INTO "events" VALUES('run_01a23429032512d4d301cebc',29,'run_cancelled',1800000060.0,'{"at":"2027-01-15T08:01:00.000000Z","data":{"by":"ops","hard":false,"previous":"running","reason":"stop"},"run_id":"run_01a23429032512d4d301cebc","seq":29,"type":"run_cancelled","v":1}','7216440bafd7f54ea230747862f09769b7b2e1fba881552d362cb8364eb6a13a','9350ab24e2fadb4852743cf3c1ddff4e1c144357169ad480b3d065016fd41148');
INSERT INTO "events" VALUES('run_01a23429032512d4d301cebc',30,'successor_created',1800000060.0,'{"at":"2027-01-15T08:01:00.000000Z","data":{"by":"ops","extend_by":null,"reason":"carry on","successor_run_id":"run_01a23429036b5fa490755c83"},"run_id":"run_01a23429032512d4d301cebc","seq":30,"type":"successor_created","v":1}','9350ab24e2fadb4852743cf3c1ddff4e1c144357169ad480b3d065016fd41148','43528aa541331f063cee01f997acdac906b638c77f7d3ccbe02ef1eaa8729795');
INSERT INTO "events" VALUES('run_01a23429035ac50cbcb3075e',1,'run_created',1800000000.0,'{"at":"2027-01-15T08:00:00.000000Z","data":{"by":"ops","carved":{"spend":"1.00","tool_calls":5,"writes":2},"contract_sha256":"bde4ff2b4fb528c9b70c6506881d7aad0d360a54a145fea6620f298ac9313b58","deadline":"2027-01-15T09:00:00.000000Z","lineage_id":"lin_01a23429035ab3baf5540c14","parent_run_id":"run_01a23429032512d4d301cebc","spec_version":"c1","tenant":"acme"},"run_id":"run_01a23429035ac50cbcb3075e","seq":1,"type":"run_created","v":1}','0000000000000000000000000000000000000000000000000000000000000000','3b5185fe9ff35e275973e37a7b8664ecb29f6b217f9a9b08fa43dff071567d1a');
INSERT INTO "events" VALUES('run_01a23429035ac50cbcb3075e',2,'lease_granted',1800000000.0,'{"at":"2027-01-15T08:00:00.000000Z","data":{"by":"ops","epoch":1,"previous_worker":null,"takeover":false,"worker":"child-worker"},"run_id":"run_01a23429035ac50cbcb3075e","seq":2,"type":"lease_granted","v":1}','3b5185fe9ff35e275973e37a7b8664ecb29f6b217f9a9b08fa43dff071567d1a','f3aa7c49baaf5eba4527453c151051c98f9ba87f8a2eee148453be656878ab06');
INSERT INTO "events" VALUES('run_01a23429035ac50cbcb3075e',3,'action_admitted',1800000000.0,'{"at":"2027-01-15T08:00:00.000000Z","data":{"action_id":"act_01a23429035d4f956f42fa29","approval_id":null,"effect":"write","epoch":1,"operation_id":"op_26472dc02c9fce2ef9ffdfbfdb1256de11643161","payload_sha256":"8c46aa13c9604f844a6197a713629f461ff39b0a7edf46e44085876d8718e5e5","process_id":"test-gateway","repeat_of":null,"reserved":{"spend":"0.00","tool_calls":1,"writes":1},"tool":"t__write","worker":"child-worker"},"run_id":"run_01a23429035ac50cbcb3075e","seq":3,"type":"action_admitted","v":1}','f3aa7c49baaf5eba4527453c151051c98f9ba87f8a2eee148453be656878ab06','c05c3cbcb01c8150d409e764ece8d2c3978b301970c37ed34c8165d47ef163a8');
INSERT INTO "events" VALUES('run_01a23429035ac50cbcb3075e',4,'action_settled',1800000000.0,'{"at":"2027-01-15T08:00:00.000000Z","data":{"action_id":"act_01a23429035d4f956f42fa29","actual_spend":"0.00","code":null,"previous":"admitted","receipt":{"digest":"c94609173315e6566d9c41c971ee07afb454a68b7e57c9ecad03a916861b6009","id":"obj-6"},"result_sha256":"d5e4fe643091055287c5f1e48eae4e826c87ee86a23fd65096f166e30aed7a27","sent":true,"status":"succeeded"},"run_id":"run_01a23429035ac50cbcb3075e","seq":4,"type":"action_settled","v":1}','c05c3cbcb01c8150d409e764ece8d2c3978b301970c37ed34c8165d47ef163a8','9bcb43ffc67595a35e9c1b300a6f9aa12926bfcea63f49585f80ec0ef7674cce');
INSERT INTO "events" VALUES('run_01a23429035ac50cbcb3075e',5,'run_cancelled',1800000000.0,'{"at":"2027-01-15T08:00:00.000000Z","data":{"by":"ops","hard":false,"previous":"running","reason":"done"},"run_id":"run_01a23429035ac50cbcb3075e","seq":5,"type":"run_cancelled","v":1}','9bcb43ffc67595a35e9c1b300a6f9aa12926bfcea63f49585f80ec0ef7674cce','3f24d20f81244e37e4721592a3b9031964281095572acd0618662528789a7362');
INSERT INTO "events" VALUES('run_01a234290362f82081ddd46a',1,'run_created',1800000000.0,'{"at":"2027-01-15T08:00:00.000000Z","data":{"by":"ops","contract_sha256":"b95ca1734cd6c0062d7840da4dae87f0323f274026906bd33b3d04e8ffb1bc7d","deadline":"2027-01-18T08:00:00.000000Z","lineage_id":"lin_01a234290362c6fe6dee82f7","spec_version":"v1","tenant":"acme"},"run_id":"run_01a234290362f82081ddd46a","seq":1,"type":"run_created","v":1}','0000000000000000000000000000000000000000000000000000000000000000','00d4b9d142b9fd2f9a58dc5942cd959fc80025da670e23e1cf36bcce02b3efce');
INSERT INTO "events" VALUES('run_01a234290362f82081ddd46a',2,'lease_granted',1800000000.0,'{"at":"2027-01-15T08:00:00.000000Z","data":{"by":"ops","epoch":1,"previous_worker":null,"takeover":false,"worker":"worker-1"},"run_id":"run_01a234290362f82081ddd46a","seq":2,"type":"lease_granted","v":1}','00d4b9d142b9fd2f9a58dc5942cd959fc80025da670e23e1cf36bcce02b3efce','cb051867f812ab281ffd82c0d632acfd2e08f63d05c1aa2730a30734fe107f1b');
INSERT INTO "events" VALUES('run_01a234290362f82081ddd46a',3,'action_admitted',1800000000.0,'{"at":"2027-01-15T08:00:00.000000Z","data":{"action_id":"act_01a23429036528e1ea2689a8","approval_id":null,"effect":"write","epoch":1,"operation_id":"op_13e622a4be5be0bd5510511969e89773ab3a032c","payload_sha256":"e00e9e7b184275cb2043898af04317cef74ccef59db3058dc216ff299f5c1210","process_id":"test-gateway","repeat_of":null,"reserved":{"spend":"0.00","tool_calls":1,"writes":1},"tool":"t__write","worker":"worker-1"},"run_id":"run_01a234290362f82081ddd46a","seq":3,"type":"action_admitted","v":1}','cb051867f812ab281ffd82c0d632acfd2e08f63d05c1aa2730a30734fe107f1b','402ce72175faca50546dcf15a0fba49c9f151eccf321cc9102c101653120a6d3');
INSERT INTO "events" VALUES('run_01a234290362f82081ddd46a',4,'action_settled',1800000000.0,'{"at":"2027-01-15T08:00:00.000000Z","data":{"action_id":"act_01a23429036528e1ea2689a8","actual_spend":"0.00","code":null,"previous":"admitted","receipt":{"digest":"d81c949e32774601f61f489a963e555464a02b1612f7d7e51742ee645e3c46ba","id":"obj-7"},"result_sha256":"5102508293774a8c5ef17b3410a0fed3c3f00baf3435a350bac38efabf879793","sent":true,"status":"succeeded"},"run_id":"run_01a234290362f82081ddd46a","seq":4,"type":"action_settled","v":1}','402ce72175faca50546dcf15a0fba49c9f151eccf321cc9102c101653120a6d3','63a35e12fde8467096cdbe4a7b1feb257ffc1f72163049ca3a02024afc6e3450');
INSERT INTO "events" VALUES('run_01a23429036b5fa490755c83',1,'run_created',1800000060.0,'{"at":"2027-01-15T08:01:00.000000Z","data":{"by":"ops","contract_sha256":"16c3e04908b51822ce40bb392b8aed8de8d7fbaa8c20c19cd64c627dd7de8c42","deadline":"2027-01-18T08:00:00.000000Z","extend_by":null,"lineage_id":"lin_01a234290325a176f12c3370","predecessor_run_id":"run_01a23429032512d4d301cebc","reason":"carry on","spec_version":"v1","tenant":"acme"},"run_id":"run_01a23429036b5fa490755c83","seq":1,"type":"run_created","v":1}','0000000000000000000000000000000000000000000000000000000000000000','c538b5df23cd7a6d1f09a7ac5f159d7e881719e36f4d244ea3007cfe04b39e4c');
CREATE TABLE key_events (
    seq      INTEGER PRIMARY KEY,
    tenant   TEXT NOT NULL,
    key_id   TEXT NOT NULL,
    type     TEXT NOT NULL,
    at       REAL NOT NULL,
    by       TEXT NOT NULL,
    data     TEXT NOT NULL                                  
);
CREATE TABLE leases (
    token_hash   TEXT PRIMARY KEY,                            
    run_id       TEXT NOT NULL REFERENCES runs (run_id),
    epoch        INTEGER NOT NULL,
    worker       TEXT NOT NULL,
    granted_by   TEXT NOT NULL,
    granted_at   REAL NOT NULL, granted_key_id TEXT,
    UNIQUE (run_id, epoch)
);
INSERT INTO "leases" VALUES('8832cc8ff9e2648a78d94f5ee78bfc0d34f9d4a630a44683edc4038de0888856','run_01a23429032512d4d301cebc',1,'worker-1','ops',1800000000.0,NULL);
INSERT INTO "leases" VALUES('29a2722d56f9393876c80fdfcb32df35a0520a5901fdac7b451f0758b5891104','run_01a23429032512d4d301cebc',2,'worker-2','ops',1800000000.0,NULL);
INSERT INTO "leases" VALUES('95e0e1d981c7977f6be6f309578e61ad262918f63f279f827a7226ab27d58165','run_01a23429035ac50cbcb3075e',1,'child-worker','ops',1800000000.0,NULL);
INSERT INTO "leases" VALUES('8882b801f0c72cd193c95a9fcd173846f3039d0c1dafa31a7c3db8a70bf711ee','run_01a234290362f82081ddd46a',1,'worker-1','ops',1800000000.0,NULL);
CREATE TABLE milestones (
    run_id              TEXT NOT NULL REFERENCES runs (run_id),
    milestone_id        TEXT NOT NULL,
    status              TEXT NOT NULL,                        
    spec_version        TEXT NOT NULL,                        
    checks              TEXT NOT NULL,                        
    reasons             TEXT NOT NULL DEFAULT '[]',           
    depends             TEXT NOT NULL DEFAULT '{}',           
    evidence_sha256     TEXT,                                 
    review_approval_id  TEXT,
    submitted_by        TEXT,
    epoch               INTEGER,
    attempts            INTEGER NOT NULL DEFAULT 0,
    inherited_from      TEXT,
    updated_at          REAL NOT NULL,
    verified_at         REAL,
    PRIMARY KEY (run_id, milestone_id)
);
CREATE TABLE rate_limits (
    scope  TEXT PRIMARY KEY,
    tat    REAL NOT NULL
) WITHOUT ROWID;
INSERT INTO "rate_limits" VALUES('refusals:run_01a23429032512d4d301cebc:1',1800000000.1);
CREATE TABLE runs (
    seq                   INTEGER PRIMARY KEY,  
    run_id                TEXT NOT NULL UNIQUE,
    tenant                TEXT NOT NULL,
    lineage_id            TEXT NOT NULL,
    parent_run_id         TEXT,
    status                TEXT NOT NULL,
    status_reason         TEXT,
    spec_version          TEXT NOT NULL,
    contract              TEXT NOT NULL,                      
    currency              TEXT NOT NULL,
    owner                 TEXT NOT NULL,
    created_by            TEXT NOT NULL,
    created_at            REAL NOT NULL,
    updated_at            REAL NOT NULL,
    deadline              REAL NOT NULL,
    lease_ttl             REAL NOT NULL,
    epoch                 INTEGER NOT NULL DEFAULT 0,        
    lease_worker          TEXT,
    lease_granted_by      TEXT,
    lease_expires_at      REAL,
    spend_limit           INTEGER NOT NULL,
    spend_reserved        INTEGER NOT NULL DEFAULT 0,
    spend_spent           INTEGER NOT NULL DEFAULT 0,
    tool_calls_limit      INTEGER NOT NULL,
    tool_calls_reserved   INTEGER NOT NULL DEFAULT 0,
    tool_calls_spent      INTEGER NOT NULL DEFAULT 0,
    writes_limit          INTEGER NOT NULL,
    writes_reserved       INTEGER NOT NULL DEFAULT 0,
    writes_spent          INTEGER NOT NULL DEFAULT 0,
    active_seconds_limit  INTEGER NOT NULL,
    active_seconds_spent  REAL NOT NULL DEFAULT 0,
    active_since          REAL,                               
    count_waiting         INTEGER NOT NULL DEFAULT 0, head_seq INTEGER NOT NULL DEFAULT 0, head_hash TEXT NOT NULL DEFAULT '0000000000000000000000000000000000000000000000000000000000000000', head_mac TEXT, last_resumed_at REAL, last_checkpoint_at REAL, progress_at REAL, checkpoint_version INTEGER NOT NULL DEFAULT 0, acked_spec_version TEXT, predecessor_run_id TEXT, carved TEXT, completion TEXT, lease_revoked_at REAL, cancelled_hard INTEGER NOT NULL DEFAULT 0, successor_run_id TEXT,
    CHECK (spend_spent + spend_reserved >= 0),
    CHECK (tool_calls_reserved >= 0 AND writes_reserved >= 0 AND spend_reserved >= 0)
);
INSERT INTO "runs" VALUES(1,'run_01a23429032512d4d301cebc','acme','lin_01a234290325a176f12c3370',NULL,'cancelled','stop','v1','{"approvals":[],"authority":{"allow":["t__*"],"constraints":{"t__constrained":"args.to.endsWith(''@acme.example'')"},"deny":["t__denied"]},"budgets":{"active_seconds":100000,"count_waiting":false,"spend":"100.00","tool_calls":1000,"writes":100},"currency":"USD","expires_in":"72h","forbid_creator_approval":false,"goal":"exercise the gate","lease_ttl":"5m","milestones":[],"owner":"ops@acme.example","progress_expectation":null,"spec_version":"v1","workers":[]}','USD','ops@acme.example','ops',1800000000.0,1800000060.0,1800259200.0,300.0,3,'worker-2','ops',1800000300.0,10000,0,12,1000,0,7,100,0,6,100000,60.0,NULL,0,30,'43528aa541331f063cee01f997acdac906b638c77f7d3ccbe02ef1eaa8729795','4db63d14f95189b38099a029315d482326894293d2307b67bf5a64dcfd4063cc',NULL,NULL,NULL,0,'v1',NULL,NULL,NULL,NULL,0,'run_01a23429036b5fa490755c83');
INSERT INTO "runs" VALUES(2,'run_01a23429035ac50cbcb3075e','acme','lin_01a23429035ab3baf5540c14','run_01a23429032512d4d301cebc','cancelled','done','c1','{"approvals":[],"authority":{"allow":["t__write","t__read"],"constraints":{"t__constrained":"args.to.endsWith(''@acme.example'')"},"deny":["t__denied"]},"budgets":{"active_seconds":3600,"count_waiting":false,"spend":"1.00","tool_calls":5,"writes":2},"currency":"USD","expires_in":"1h","forbid_creator_approval":false,"goal":"a part","lease_ttl":"5m","milestones":[],"owner":"ops@acme.example","progress_expectation":null,"spec_version":"c1","workers":[]}','USD','ops@acme.example','ops',1800000000.0,1800000000.0,1800003600.0,300.0,2,'child-worker','ops',1800000300.0,100,0,0,5,0,1,2,0,1,3600,0.0,NULL,0,5,'3f24d20f81244e37e4721592a3b9031964281095572acd0618662528789a7362','c86b823fe7196d412b02a8bdffad86ba3c304416263e8d62a21a0a7da242d347',NULL,NULL,NULL,0,'c1',NULL,'{"spend": 100, "tool_calls": 5, "writes": 2}',NULL,NULL,0,NULL);
INSERT INTO "runs" VALUES(3,'run_01a234290362f82081ddd46a','acme','lin_01a234290362c6fe6dee82f7',NULL,'running',NULL,'v1','{"approvals":[],"authority":{"allow":["t__*"],"constraints":{"t__constrained":"args.to.endsWith(''@acme.example'')"},"deny":["t__denied"]},"budgets":{"active_seconds":100000,"count_waiting":false,"spend":"100.00","tool_calls":1000,"writes":100},"currency":"USD","expires_in":"72h","forbid_creator_approval":false,"goal":"exercise the gate","lease_ttl":"5m","milestones":[],"owner":"ops@acme.example","progress_expectation":null,"spec_version":"v1","workers":[]}','USD','ops@acme.example','ops',1800000000.0,1800000000.0,1800259200.0,300.0,1,'worker-1','ops',1800000300.0,10000,0,0,1000,0,1,100,0,1,100000,0.0,1800000000.0,0,4,'63a35e12fde8467096cdbe4a7b1feb257ffc1f72163049ca3a02024afc6e3450','68570704d557ab0745133022ae54f47dc427655b8413cc9beedf176a94d07f89',NULL,NULL,NULL,0,'v1',NULL,NULL,NULL,NULL,0,NULL);
INSERT INTO "runs" VALUES(4,'run_01a23429036b5fa490755c83','acme','lin_01a234290325a176f12c3370',NULL,'running',NULL,'v1','{"approvals":[],"authority":{"allow":["t__*"],"constraints":{"t__constrained":"args.to.endsWith(''@acme.example'')"},"deny":["t__denied"]},"budgets":{"active_seconds":99940,"count_waiting":false,"spend":"99.88","tool_calls":993,"writes":94},"currency":"USD","expires_in":"72h","forbid_creator_approval":false,"goal":"exercise the gate","lease_ttl":"5m","milestones":[],"owner":"ops@acme.example","progress_expectation":null,"spec_version":"v1","workers":[]}','USD','ops@acme.example','ops',1800000060.0,1800000060.0,1800259200.0,300.0,0,NULL,NULL,NULL,9988,0,0,993,0,0,94,0,0,99940,0.0,1800000060.0,0,1,'c538b5df23cd7a6d1f09a7ac5f159d7e881719e36f4d244ea3007cfe04b39e4c','7e4bf1e508bb938ad0141846af28507ad2d0d7506f55da1ab75ae65efd25be1f',NULL,NULL,NULL,0,'v1','run_01a23429032512d4d301cebc',NULL,NULL,NULL,0,NULL);
CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, applied_at REAL);
INSERT INTO "schema_migrations" VALUES(1,1796171432.0);
INSERT INTO "schema_migrations" VALUES(2,1796171432.0);
INSERT INTO "schema_migrations" VALUES(3,1796171432.0);
INSERT INTO "schema_migrations" VALUES(4,1796171432.0);
INSERT INTO "schema_migrations" VALUES(5,1796171432.0);
INSERT INTO "schema_migrations" VALUES(6,1796171432.0);
INSERT INTO "schema_migrations" VALUES(7,1796171432.0);
INSERT INTO "schema_migrations" VALUES(8,1796171432.0);
INSERT INTO "schema_migrations" VALUES(9,1796171432.0);
INSERT INTO "schema_migrations" VALUES(10,1796171432.0);
INSERT INTO "schema_migrations" VALUES(11,1796171432.0);
INSERT INTO "schema_migrations" VALUES(12,1796171432.0);
INSERT INTO "schema_migrations" VALUES(13,1796171432.0);
INSERT INTO "schema_migrations" VALUES(14,1796171432.0);
CREATE TABLE tool_pin_adapters (
    adapter            TEXT PRIMARY KEY,
    first_pinned_at    REAL NOT NULL
);
CREATE TABLE tool_pins (
    tool               TEXT PRIMARY KEY,                     
    adapter            TEXT NOT NULL,
    definition_sha256  TEXT NOT NULL,
    definition         TEXT NOT NULL,                        
    pinned_by          TEXT NOT NULL,                        
    pinned_at          REAL NOT NULL,
    previous_sha256    TEXT                                  
);
CREATE TABLE watch_alerts (
    seq        INTEGER PRIMARY KEY,
    alert_id   TEXT NOT NULL UNIQUE,
    run_id     TEXT NOT NULL,
    tenant     TEXT NOT NULL,
    kind       TEXT NOT NULL,
    episode    TEXT NOT NULL,
    at         REAL NOT NULL,
    data       TEXT NOT NULL,                               
    raised_by  TEXT NOT NULL,                               
    UNIQUE (run_id, kind, episode)
);
CREATE TABLE watch_leases (
    name          TEXT PRIMARY KEY,
    holder        TEXT NOT NULL,
    expires_at    REAL NOT NULL,
    acquired_at   REAL NOT NULL,
    heartbeat_at  REAL
);
CREATE TABLE webhook_deliveries (
    seq            INTEGER PRIMARY KEY,
    delivery_id    TEXT NOT NULL UNIQUE,
    target         TEXT NOT NULL,                           
    kind           TEXT NOT NULL,
    body           TEXT NOT NULL,
    status         TEXT NOT NULL,                           
    attempts       INTEGER NOT NULL DEFAULT 0,
    max_attempts   INTEGER NOT NULL,
    next_at        REAL NOT NULL,
    claimed_by     TEXT,
    claimed_until  REAL,
    last_error     TEXT,
    created_at     REAL NOT NULL,
    done_at        REAL
);
CREATE INDEX runs_tenant ON runs (tenant, seq);
CREATE INDEX actions_run ON actions (run_id, seq);
CREATE UNIQUE INDEX actions_operation ON actions (lineage_id, operation_id)
    WHERE operation_id IS NOT NULL AND status IN ('admitted', 'succeeded', 'unknown', 'compensated');
CREATE INDEX approvals_binding ON approvals (run_id, tool, payload_sha256);
CREATE INDEX approvals_tenant ON approvals (tenant, status, seq);
CREATE VIEW chain_heads AS
    SELECT run_id, head_seq AS seq, head_hash AS hash, head_mac AS mac FROM runs WHERE head_mac IS NOT NULL;
CREATE TRIGGER chain_heads_update INSTEAD OF UPDATE ON chain_heads
BEGIN
    UPDATE runs SET head_seq = NEW.seq, head_hash = NEW.hash, head_mac = NEW.mac WHERE run_id = OLD.run_id;
END;
CREATE INDEX api_keys_tenant ON api_keys (tenant, seq);
CREATE INDEX api_keys_name ON api_keys (tenant, name) WHERE revoked_at IS NULL;
CREATE INDEX key_events_tenant ON key_events (tenant, seq);
CREATE INDEX charges_run ON charges (run_id, seq);
CREATE UNIQUE INDEX charges_ref ON charges (run_id, ref) WHERE ref IS NOT NULL;
CREATE INDEX runs_live_deadline ON runs (deadline) WHERE status IN ('running', 'waiting', 'paused');
CREATE INDEX approvals_open ON approvals (run_id) WHERE status IN ('pending', 'approved');
CREATE INDEX actions_unknown ON actions (run_id) WHERE status = 'unknown';
CREATE INDEX webhook_deliveries_due ON webhook_deliveries (next_at) WHERE status = 'pending';
CREATE INDEX runs_parent ON runs (parent_run_id) WHERE parent_run_id IS NOT NULL;
CREATE INDEX leases_granted_key ON leases (granted_key_id) WHERE granted_key_id IS NOT NULL;
CREATE INDEX actions_result ON actions (result_sha256) WHERE result_sha256 IS NOT NULL;
CREATE INDEX actions_payload ON actions (payload_sha256);
CREATE INDEX actions_in_flight ON actions (run_id, process_id) WHERE status = 'admitted';
CREATE INDEX actions_unpurged ON actions (settled_at) WHERE bodies_purged_at IS NULL AND settled_at IS NOT NULL;
CREATE UNIQUE INDEX runs_successor ON runs (successor_run_id) WHERE successor_run_id IS NOT NULL;
CREATE TRIGGER runs_money_insert BEFORE INSERT ON runs
WHEN typeof(NEW.spend_limit) != 'integer' OR typeof(NEW.spend_reserved) != 'integer'
  OR typeof(NEW.spend_spent) != 'integer' OR typeof(NEW.tool_calls_limit) != 'integer'
  OR typeof(NEW.tool_calls_reserved) != 'integer' OR typeof(NEW.tool_calls_spent) != 'integer'
  OR typeof(NEW.writes_limit) != 'integer' OR typeof(NEW.writes_reserved) != 'integer'
  OR typeof(NEW.writes_spent) != 'integer'
  OR NEW.spend_limit > 99999999999999999 OR NEW.spend_reserved > 99999999999999999 OR NEW.spend_spent > 99999999999999999
BEGIN
  SELECT RAISE(ABORT, 'money_out_of_range: a run''s money or counter is not an integer within its bound');
END;
CREATE TRIGGER runs_money_update BEFORE UPDATE OF spend_limit, spend_reserved, spend_spent, tool_calls_limit,
  tool_calls_reserved, tool_calls_spent, writes_limit, writes_reserved, writes_spent ON runs
WHEN typeof(NEW.spend_limit) != 'integer' OR typeof(NEW.spend_reserved) != 'integer'
  OR typeof(NEW.spend_spent) != 'integer' OR typeof(NEW.tool_calls_limit) != 'integer'
  OR typeof(NEW.tool_calls_reserved) != 'integer' OR typeof(NEW.tool_calls_spent) != 'integer'
  OR typeof(NEW.writes_limit) != 'integer' OR typeof(NEW.writes_reserved) != 'integer'
  OR typeof(NEW.writes_spent) != 'integer'
  OR NEW.spend_limit > 99999999999999999 OR NEW.spend_reserved > 99999999999999999 OR NEW.spend_spent > 99999999999999999
BEGIN
  SELECT RAISE(ABORT, 'money_out_of_range: a run''s money or counter is not an integer within its bound');
END;
CREATE TRIGGER actions_money BEFORE UPDATE OF actual_spend ON actions
WHEN NEW.actual_spend IS NOT NULL AND (typeof(NEW.actual_spend) != 'integer' OR NEW.actual_spend > 99999999999999999)
BEGIN
  SELECT RAISE(ABORT, 'money_out_of_range: an action''s cost is not an integer within its bound');
END;
CREATE TRIGGER charges_money BEFORE INSERT ON charges
WHEN typeof(NEW.amount) != 'integer' OR NEW.amount > 99999999999999999
BEGIN
  SELECT RAISE(ABORT, 'money_out_of_range: a charge is not an integer within its bound');
END;
COMMIT;
