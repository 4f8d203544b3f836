-- 0007: idempotency keys of API requests (store.Idempotency): a claim
-- before the work (digest of the body, ref: what it creates), its response
-- after (status 0 until then).
CREATE TABLE idempotency (
	scope      TEXT    NOT NULL,
	key        TEXT    NOT NULL,
	digest     TEXT    NOT NULL,
	ref        TEXT    NOT NULL,
	status     INTEGER NOT NULL DEFAULT 0,
	body       BLOB,
	created_ns INTEGER NOT NULL,
	PRIMARY KEY (scope, key)
) WITHOUT ROWID;
CREATE INDEX idempotency_created ON idempotency (created_ns);
