-- 0005: idempotency keys of API requests (store.Idempotency): a claim
-- before the work (digest of the body, ref: what it creates), its response
-- after (status 0 until then).
CREATE TABLE idempotency (
	scope      text   NOT NULL,
	key        text   NOT NULL,
	digest     text   NOT NULL,
	ref        text   NOT NULL,
	status     int    NOT NULL DEFAULT 0,
	body       bytea,
	created_ns bigint NOT NULL,
	PRIMARY KEY (scope, key)
);
CREATE INDEX idempotency_created ON idempotency (created_ns);
