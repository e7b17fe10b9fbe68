"""The ledger schema as forward-only migrations shared by every SQL backend.

``{blob}``, ``{real}`` and ``{bigint}`` stand for the backend's column types. A migration is
applied once, in order, inside one transaction that also records its version; a database
newer than this code is refused rather than written to.
"""

from __future__ import annotations

MIGRATIONS: tuple[tuple[int, str], ...] = (
    (
        1,
        """
        CREATE TABLE runs (
            id TEXT PRIMARY KEY,
            repo TEXT NOT NULL,
            title TEXT NOT NULL,
            body TEXT NOT NULL,
            workflow TEXT NOT NULL,
            issue {bigint},
            pr {bigint},
            state TEXT NOT NULL,
            step TEXT NOT NULL,
            attempt {bigint} NOT NULL,
            step_epoch {bigint},
            version {bigint} NOT NULL,
            lease_owner TEXT,
            lease_epoch {bigint} NOT NULL,
            lease_expires_at {real},
            base_revision TEXT,
            head_revision TEXT,
            ready_at {real},
            deadline {real},
            reason TEXT,
            params TEXT NOT NULL,
            last_seq {bigint} NOT NULL,
            created_at {real} NOT NULL,
            updated_at {real} NOT NULL
        );
        CREATE INDEX runs_by_state ON runs (state);
        CREATE INDEX runs_by_created ON runs (created_at);
        CREATE TABLE events (
            run_id TEXT NOT NULL REFERENCES runs (id),
            seq {bigint} NOT NULL,
            type TEXT NOT NULL,
            at {real} NOT NULL,
            step TEXT,
            attempt {bigint},
            lease_epoch {bigint} NOT NULL,
            revision TEXT,
            key TEXT,
            data TEXT NOT NULL,
            PRIMARY KEY (run_id, seq)
        );
        CREATE TABLE checkpoints (
            run_id TEXT NOT NULL REFERENCES runs (id),
            step TEXT NOT NULL,
            position {bigint} NOT NULL,
            attempt {bigint} NOT NULL,
            body TEXT NOT NULL,
            sha256 TEXT NOT NULL,
            created_at {real} NOT NULL,
            PRIMARY KEY (run_id, step)
        );
        CREATE TABLE effects (
            key TEXT PRIMARY KEY,
            run_id TEXT NOT NULL REFERENCES runs (id),
            step TEXT NOT NULL,
            kind TEXT NOT NULL,
            payload_hash TEXT NOT NULL,
            payload TEXT NOT NULL,
            status TEXT NOT NULL,
            resource TEXT,
            attempts {bigint} NOT NULL,
            created_at {real} NOT NULL,
            updated_at {real} NOT NULL
        );
        CREATE INDEX effects_by_run ON effects (run_id);
        CREATE TABLE blobs (
            sha256 TEXT PRIMARY KEY,
            size {bigint} NOT NULL,
            data {blob} NOT NULL
        );
        CREATE TABLE artifacts (
            run_id TEXT NOT NULL REFERENCES runs (id),
            path TEXT NOT NULL,
            sha256 TEXT NOT NULL REFERENCES blobs (sha256),
            PRIMARY KEY (run_id, path)
        );
        CREATE TABLE deliveries (
            id TEXT PRIMARY KEY,
            event TEXT NOT NULL,
            run_id TEXT,
            first_seen {real} NOT NULL
        );
        """,
    ),
    (
        2,
        """
        ALTER TABLE runs ADD COLUMN woken_at {real};
        CREATE INDEX events_by_type ON events (type);
        """,
    ),
    (
        3,
        """
        CREATE TABLE signals (
            id TEXT PRIMARY KEY,
            run_id TEXT NOT NULL REFERENCES runs (id),
            kind TEXT NOT NULL,
            author TEXT NOT NULL,
            origin TEXT NOT NULL,
            payload TEXT NOT NULL,
            status TEXT NOT NULL,
            reason TEXT,
            created_at {real} NOT NULL,
            decided_at {real}
        );
        CREATE INDEX signals_by_run ON signals (run_id, created_at);
        CREATE INDEX signals_pending ON signals (status);
        ALTER TABLE effects ADD COLUMN position {bigint} NOT NULL DEFAULT 0;
        CREATE INDEX effects_by_status ON effects (status);
        """,
    ),
    (
        4,
        """
        ALTER TABLE deliveries ADD COLUMN action TEXT;
        ALTER TABLE deliveries ADD COLUMN decision TEXT;
        ALTER TABLE deliveries ADD COLUMN reason TEXT;
        CREATE INDEX runs_by_issue ON runs (repo, issue);
        CREATE INDEX runs_by_pr ON runs (repo, pr);
        """,
    ),
    (
        5,
        """
        CREATE INDEX deliveries_by_event ON deliveries (event);
        CREATE TABLE early_signals (
            id TEXT PRIMARY KEY,
            repo TEXT NOT NULL,
            number {bigint} NOT NULL,
            kind TEXT NOT NULL,
            author TEXT NOT NULL,
            origin TEXT NOT NULL,
            payload TEXT NOT NULL,
            created_at {real} NOT NULL
        );
        CREATE INDEX early_signals_by_number ON early_signals (repo, number);
        CREATE TABLE replies (
            repo TEXT NOT NULL,
            number {bigint} NOT NULL,
            login TEXT NOT NULL,
            at {real} NOT NULL,
            PRIMARY KEY (repo, number, login)
        );
        """,
    ),
    (
        6,
        """
        CREATE TABLE pickups (
            run_id TEXT PRIMARY KEY,
            at {real} NOT NULL
        );
        """,
    ),
)

LATEST = MIGRATIONS[-1][0]


def statements(ddl: str, types: dict[str, str]) -> list[str]:
    """Split a migration into statements with the backend's column types filled in."""
    return [part.strip() for part in ddl.format(**types).split(";") if part.strip()]
