"""Open a store by URL, check its schema, ingest runs atomically, read histories back.

URL: `sqlite:///path/to/history.db` (the embedded default) or `postgresql://user@host/db`
(psycopg 3 is used for it). Every failure a person can cause (a corrupt file, a newer schema, an
unreachable server, a database locked past the retries) is a StoreError with one line naming the
store; no partial run is ever left: each run goes in one transaction.
"""
from __future__ import annotations

import hashlib
import json
import os
import statistics
import time
from contextlib import nullcontext
from dataclasses import dataclass, field
from pathlib import Path

from sqlalchemy import create_engine, event, func, insert, select, text
from sqlalchemy.exc import DBAPIError, IntegrityError, OperationalError, SQLAlchemyError

from cudnn_hostbench.bench.measure.runfile import plan_rules
from cudnn_hostbench.bench.measure.runfile.records import UNIT_SECONDS, Run
from cudnn_hostbench.reports.history import identity, migrate, ratios, where
from cudnn_hostbench.reports.history import schema as S

ENV_URL = "HOSTBENCH_STORE"
LOCK_RETRIES, LOCK_WAIT_S = 5, 1.0   # a locked SQLite file: wait, retry, then one line


class StoreError(Exception):
    """One line for a person: which store, what is wrong."""


def default_url() -> str:
    """$HOSTBENCH_STORE, else results/history.db where results belong (where.py: the checkout, the
    current project or the user's data folder; never inside an installed package)."""
    if os.environ.get(ENV_URL):
        return os.environ[ENV_URL]
    return f"sqlite:///{where.default_store()}"


def as_url(url: str) -> str:
    """A store URL; a plain file path is a SQLite store."""
    return url if "://" in url else f"sqlite:///{url}"


def sqlite_path(url: str) -> Path | None:
    """The file of a SQLite URL (None: not SQLite, or in memory)."""
    if not url.startswith("sqlite") or ":///" not in url:
        return None
    path = url.split(":///", 1)[1].split("?", 1)[0]
    return Path(path) if path and path != ":memory:" else None


def _shown(url: str) -> str:
    """The URL without a password; a SQLite file as a person can reach it from here."""
    path = sqlite_path(url)
    if path is not None:
        return f"sqlite:///{where.shown(path)}"
    if "://" in url and "@" in url.split("://", 1)[1]:
        scheme, rest = url.split("://", 1)
        cred, host = rest.rsplit("@", 1)
        return f"{scheme}://{cred.split(':')[0]}@{host}"
    return url


def _one_line(text) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= 240 else text[:239] + "…"


def _is_locked(error: Exception) -> bool:
    return "locked" in str(getattr(error, "orig", error)).lower() or "busy" in str(getattr(error, "orig", error)).lower()


@dataclass
class Figure:
    probe: str
    variant: str
    size: str
    mode: str
    status: str
    unit: str
    value: float | None
    on_ratio: bool
    median_us: float | None
    workers: list = field(default_factory=list)
    spread: float | None = None
    flags: str = ""
    kernels: str = ""
    host_state: str = ""
    baseline: str = ""
    role: str = ""
    plan_rule: str = ""      # the variant's plan rule (recorded, or inferred for old runs: history.plans)
    plan: str = ""           # the plan it ran, where the record names it

    @property
    def row(self) -> tuple:
        return (self.probe, self.variant, self.size, self.mode)

    @property
    def processes(self) -> int:
        """Worker processes behind the figure (one value per worker; none listed: one process)."""
        return len(self.workers) or 1


def _us(amount: float, unit: str) -> float:
    return amount * UNIT_SECONDS.get(unit, 1e-6) / 1e-6


def _kernels_of(run: Run, rec) -> str:
    """The device kernels of a record's row (its device record's), named without their counts."""
    device = rec if rec.mode == "device" else run.find(rec.probe, rec.variant, rec.size, "device")
    if device is None:
        return ""
    return ";".join(sorted({n.rsplit(" x", 1)[0] for n in device.kernel_names}))


def _judged_figure(run: Run, rec, baseline, median_us: float) -> tuple[bool, float, list]:
    """(on its ratio to the baseline, the judged value, its per-worker values): eager rows with a
    baseline on their paired ratio, the rest on µs."""
    ratios = [w["ratio"] for w in rec.workers if w.get("ratio") is not None]
    on_ratio = (rec.mode == "eager" and baseline is not None and baseline is not rec
                and (bool(ratios) or bool(rec.ratio)))
    if on_ratio:
        return True, statistics.median(ratios) if ratios else rec.ratio.median, ratios
    return False, median_us, [_us(w["median"], rec.unit) for w in rec.workers if w.get("median") is not None]


def _figure_flags(rec, baseline) -> str:
    """A record's marks, with ratios.UNPAIRED where its workers are not its baseline's."""
    flags = list(rec.flags or ())
    if (rec.mode in ratios.MODES and baseline is not None and baseline is not rec
            and _worker_ids(rec) != _worker_ids(baseline)):
        flags.append(ratios.UNPAIRED)   # its workers are not its baseline's: no paired ratio
    return ",".join(flags)


def _figure(run: Run, rec, version) -> Figure:
    """One record as a store figure."""
    rule = plan_rules.rule_of(getattr(rec, "plan_rule", "") or "", version, rec.probe, rec.variant)
    kern = _kernels_of(run, rec)
    plan = str(getattr(rec, "plan", "") or "")
    if not rec.ok:
        return Figure(rec.probe, rec.variant, str(rec.size), rec.mode, rec.status or "no samples",
                      rec.unit, None, False, None, kernels=kern, role=rec.role, plan_rule=rule, plan=plan)
    med = _us(rec.summary().median, rec.unit)
    baseline = run.baseline_of(rec)
    on_ratio, value, workers = _judged_figure(run, rec, baseline, med)
    return Figure(rec.probe, rec.variant, str(rec.size), rec.mode, "ok", rec.unit, value, on_ratio, med,
                  workers, rec.spread, _figure_flags(rec, baseline), kern, rec.host_state or "",
                  baseline.variant if baseline is not None else "", rec.role, rule, plan)


def figures_of(run: Run) -> list[Figure]:
    """A run's records as store figures: eager rows with a baseline are judged on their paired
    ratio to it (as compare does), the rest on µs; per-worker values of the judged figure."""
    version = S.measurement_version_of(run.fingerprint)
    return [_figure(run, rec, version) for rec in run.records]


def _worker_ids(rec) -> list:
    return [w.get("worker") for w in rec.workers if w.get("median") is not None]


def run_meta(run: Run, source_hash: str) -> dict:
    """The runs-table row of a run (without its id)."""
    fp = run.fingerprint
    key = S.key_of(fp)
    stored = fp.to_dict()     # the info column keeps these fields as the run file has them
    info = {k: stored[k] for k in ("python", "platform", "cpu_model", "cpu_count", "workers", "suite_wall_s",
                                   "gpu_clocks_top_mhz", "compute_capability", "options", "machine", "node_job")
            if k in stored}
    return dict(source_hash=source_hash, history_key=S.key_hash(key), gpu=str(fp.gpu_name or "unknown GPU"),
                started_at=str(run.datetime or fp.datetime or ""),
                commit_id=str(fp.commit_info.id or ""),
                driver=key["driver"], cuda=key["cuda"], cudnn_backend=key["cudnn_backend"],
                frontend=key["cudnn_frontend"], torch=key["torch"], measurement_version=S.measurement_version_of(fp),
                host=str(fp.extra.get("host") or fp.extra.get("node") or ""), source_path=str(run.path),
                host_unstable=bool(fp.host_state.unstable), excluded="",
                key_json=json.dumps(key, sort_keys=True), info_json=json.dumps(info, sort_keys=True, default=str),
                **machine_of(run))


def machine_of(run: Run) -> dict:
    """The runs-table fields of where a run ran: its start ('<boot id>/<GPU UUID>', '' when
    unknown), the GPU's UUID, the whole identity, and the probes it held (a partial run holds few)."""
    fp = run.fingerprint
    ident = fp.machine.to_dict()
    return dict(start=fp.start, gpu_uuid=fp.gpu_uuid,
                machine_json=json.dumps(ident, sort_keys=True, default=str),
                probes=",".join(sorted({r.probe for r in run.records})))


def file_hash(path: str | Path) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def _room_for_store(shown: str, path: Path, create: bool) -> None:
    """A missing SQLite file: StoreError unless `create` may make it, its folder made."""
    if not create or path.exists():
        raise StoreError(f"{shown}: no store there" + (
            " (not a file)" if path.exists() else "; is the path right? Only `hostbench history "
            "ingest` makes a store"))
    blocker = next((d for d in path.parents if d.exists()), None)
    if blocker is not None and not blocker.is_dir():
        raise StoreError(f"{shown}: {where.shown(blocker)} is a file, not a folder")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as e:   # a folder we may not write
        raise StoreError(f"{shown}: cannot make its folder {where.shown(path.parent)} "
                         f"({e.strerror or e})") from e


class Store:
    """An open store. Use `open_store(url)`."""

    def __init__(self, url: str, lock_retries: int | None = None, lock_wait_s: float | None = None,
                 upgrade: bool = False, create: bool = False):
        self.url, self.shown = url, _shown(url)
        self.upgrade = upgrade            # migrate an older schema on open (hostbench history upgrade)
        self.create = create              # only what stores runs makes a store; reading never does
        self.upgraded: tuple | None = None   # (from revision, to revision) when it did
        self.lock_retries = LOCK_RETRIES if lock_retries is None else lock_retries
        self.lock_wait_s = LOCK_WAIT_S if lock_wait_s is None else lock_wait_s
        self.sqlite = url.startswith("sqlite")
        kw: dict = {}
        if self.sqlite:
            path = sqlite_path(url)
            if path is not None and not path.is_file():
                _room_for_store(self.shown, path, create)
            kw["connect_args"] = {"timeout": self.lock_wait_s}
        elif url.startswith("postgresql://") or url.startswith("postgres://"):
            url = "postgresql+psycopg://" + url.split("://", 1)[1]
            kw["connect_args"] = {"connect_timeout": 5}
        elif not url.startswith("postgresql+"):   # SQLAlchemy would name a driver to install, not what works
            raise StoreError(f"{self.shown}: not a supported store URL; use sqlite:///FILE (or a .db file) "
                             "or postgresql://user@host/db")
        try:
            self.engine = create_engine(url, **kw)
        except (SQLAlchemyError, ImportError, ValueError) as e:
            raise StoreError(f"{self.shown}: not a store URL ({_one_line(e)})") from e
        if self.sqlite:
            @event.listens_for(self.engine, "connect")
            def _connect(conn, _record):
                # the driver's own transaction handling leaves DDL outside transactions: a second
                # writer could see the tables before the schema version; we issue BEGIN ourselves
                conn.isolation_level = None
                conn.execute("PRAGMA foreign_keys=ON")   # SQLite enforces them only when asked

            @event.listens_for(self.engine, "begin")
            def _begin(conn):
                conn.exec_driver_sql("BEGIN")
        self._check_schema()

    # -- opening ---------------------------------------------------------------------------------
    def _retry(self, what: str, action):
        """Runs action(); a locked database is waited for and retried, then one line."""
        for attempt in range(self.lock_retries + 1):
            try:
                return action()
            except IntegrityError:
                raise   # the callers know what a duplicate means
            except OperationalError as e:
                if self.sqlite and _is_locked(e) and attempt < self.lock_retries:
                    time.sleep(self.lock_wait_s)
                    continue
                if _is_locked(e):
                    raise StoreError(f"{self.shown}: locked by another writer; gave up {what} after "
                                     f"{self.lock_retries + 1} tries (nothing changed)") from e
                raise StoreError(f"{self.shown}: cannot {what} ({_one_line(getattr(e, 'orig', e))})") from e
            except DBAPIError as e:
                raise StoreError(f"{self.shown}: cannot {what}: not a hostbench store, or a damaged one "
                                 f"({_one_line(getattr(e, 'orig', e))})") from e

    def _check_schema(self) -> None:
        def check():
            with self.engine.begin() as c:
                names = set(self.engine.dialect.get_table_names(c))
                ours = {t.name for t in S.metadata.sorted_tables}
                if not names & ours and not self.sqlite:
                    # two first writers at once: the second waits here, then finds the tables
                    c.execute(text("SELECT pg_advisory_xact_lock(4242018)"))
                    names = set(self.engine.dialect.get_table_names(c))
                if not names & ours:
                    if names and self.sqlite:
                        raise StoreError(f"{self.shown}: a database of something else (tables "
                                         f"{', '.join(sorted(names)[:5])}); not a hostbench store")
                    if not self.create:
                        raise StoreError(f"{self.shown}: holds no hostbench store yet; `hostbench history "
                                         "ingest RUN --store URL` makes one")
                    S.metadata.create_all(c)
                    c.execute(insert(S.meta).values(name="schema_version", value=str(S.SCHEMA_VERSION)))
                    migrate.stamp(c)      # today's tables: Alembic's head revision
                    return
                v = c.execute(select(S.meta.c.value).where(S.meta.c.name == "schema_version")).scalar()
                if v is None or not str(v).isdigit():
                    raise StoreError(f"{self.shown}: no schema version in hb_meta; not a store this hostbench made")
                if int(v) > S.SCHEMA_VERSION:
                    raise StoreError(f"{self.shown}: schema version {v} is newer than this hostbench reads "
                                     f"({S.SCHEMA_VERSION}); upgrade hostbench (the store is left as it is)")
                if int(v) < S.SCHEMA_VERSION and not self.upgrade:
                    raise StoreError(f"{self.shown}: schema version {v} is older than {S.SCHEMA_VERSION}; "
                                     f"`hostbench history upgrade --store URL` migrates it (back it up first)")
                if migrate.revision_of(c) is None:
                    if int(v) != 1:
                        raise StoreError(f"{self.shown}: schema version {v} without a migration revision; "
                                         "not a store this hostbench made")
                    migrate.stamp_at(c, "0001")   # made before Alembic was wired: schema 1 is revision 0001
                if self.upgrade:
                    before, after = migrate.upgrade(c)
                    c.execute(S.meta.update().where(S.meta.c.name == "schema_version")
                              .values(value=str(migrate.SCHEMA_OF_REVISION[after])))
                    self.upgraded = (before, after)
        try:
            self._retry("open the store", check)
        except (IntegrityError, StoreError) as e:
            # two writers created it at once and the other one won: its tables are there now
            if isinstance(e, StoreError) and "already exists" not in str(e):
                raise
            self._retry("open the store", check)

    def close(self) -> None:
        self.engine.dispose()

    # -- writing ---------------------------------------------------------------------------------
    def _row_ids(self, conn, keys: list[tuple]) -> dict[tuple, int]:
        # row ids never change once made: known ones are kept between ingests
        have = self._rows = getattr(self, "_rows", {})
        if all(k in have for k in keys):
            return have
        for r in conn.execute(select(S.rows.c.id, S.rows.c.probe, S.rows.c.variant, S.rows.c.size, S.rows.c.mode)):
            have[(r.probe, r.variant, r.size, r.mode)] = r.id
        missing = [k for k in dict.fromkeys(keys) if k not in have]
        if missing:
            if self.sqlite:
                from sqlalchemy.dialects.sqlite import insert as dialect_insert
            else:
                from sqlalchemy.dialects.postgresql import insert as dialect_insert
            stmt = dialect_insert(S.rows).on_conflict_do_nothing()
            conn.execute(stmt, [dict(zip(("probe", "variant", "size", "mode"), k)) for k in missing])
            for r in conn.execute(select(S.rows.c.id, S.rows.c.probe, S.rows.c.variant, S.rows.c.size, S.rows.c.mode)):
                have[(r.probe, r.variant, r.size, r.mode)] = r.id
        return have

    def ingest(self, meta: dict, figs: list[Figure]) -> tuple[int, bool]:
        """Stores one run and its figures in one transaction: (run id, True if newly stored).
        A run already stored (the same file, or the same run in other bytes: identity.py) is not
        stored again; its id comes back."""
        def go():
            with self.engine.begin() as c:
                return self._ingest_in(c, meta, figs)
        try:
            return self._retry(f"store run {meta.get('source_path')}", go)
        except IntegrityError:   # another writer stored the same run between our check and insert
            self._rows = {}      # row ids read inside the rolled-back transaction may not exist
            return self._retry(f"store run {meta.get('source_path')}", go)
        except BaseException:
            self._rows = {}
            raise

    def _ingest_in(self, conn, meta: dict, figs: list[Figure]) -> tuple[int, bool]:
        """Stores one run on connection `conn`, inside its transaction: (run id, True if new)."""
        old = conn.execute(select(S.runs.c.id).where(S.runs.c.source_hash == meta["source_hash"])).scalar()
        if old is None:
            old = self._same_run(conn, meta, figs)
        if old is not None:
            return old, False
        ids = self._row_ids(conn, [f.row for f in figs])
        rid = conn.execute(insert(S.runs).values(**meta, n_figures=len(figs))).inserted_primary_key[0]
        if figs:
            conn.execute(insert(S.figures), [dict(
                run_id=rid, row_id=ids[f.row], status=f.status[:2000], unit=f.unit, value=f.value,
                on_ratio=f.on_ratio, median_us=f.median_us, workers_json=json.dumps(f.workers),
                spread=f.spread, flags=f.flags, kernels=f.kernels, host_state=f.host_state,
                baseline=f.baseline, role=f.role, plan_rule=f.plan_rule, plan=f.plan) for f in figs])
        return rid, True

    def ingest_job(self, job) -> dict:
        """Stores an A/B job (reports/history/abjobs.py) in one transaction: each side's run as an
        ordinary run (each stored once, as `ingest` does), then the job's paired results, one row
        per comparison and row, unless a job with the same ab.json is stored already. Returns
        {"runs": {label: (run id, new)}, "rows": rows stored (0: already), "already": bool}."""
        def go():
            with self.engine.begin() as c:
                if not self.sqlite:   # a second writer of the same job waits for the first one's commit
                    c.execute(text("SELECT pg_advisory_xact_lock(:k)"), {"k": int(job.job_hash[:15], 16)})
                runs = {}
                for label, side in job.sides.items():
                    if side.run is None:
                        continue
                    meta = run_meta(side.run, side.source_hash)
                    meta["source_path"] = str(Path(side.path).resolve())
                    runs[label] = self._ingest_in(c, meta, figures_of(side.run))
                have = c.execute(select(func.count()).select_from(S.ab_rows)
                                 .where(S.ab_rows.c.job_hash == job.job_hash)).scalar()
                if have:
                    return {"runs": runs, "rows": 0, "already": True}
                rows = job.rows()
                ids = self._row_ids(c, [r["key"] for r in rows])
                if rows:
                    c.execute(insert(S.ab_rows), [
                        {**{k: v for k, v in r.items() if k != "key"}, "row_id": ids[r["key"]],
                         "side_run_id": (runs.get(r["side"]) or (None,))[0],
                         "reference_run_id": (runs.get(r["reference"]) or (None,))[0]} for r in rows])
                return {"runs": runs, "rows": len(rows), "already": False}
        try:
            return self._retry(f"store A/B job {job.path}", go)
        except IntegrityError:   # another writer stored the same job (or one of its runs) meanwhile
            self._rows = {}
            return self._retry(f"store A/B job {job.path}", go)
        except BaseException:
            self._rows = {}
            raise

    def ab_rows(self, job_hash: str | None = None) -> list[dict]:
        """The stored paired results (every job, or one), oldest job first, each with its row's
        probe, variant, size and mode."""
        a, r = S.ab_rows.c, S.rows.c
        q = (select(S.ab_rows, r.probe, r.variant, r.size, r.mode)
             .select_from(S.ab_rows.join(S.rows, a.row_id == r.id)).order_by(a.started_at, a.job_hash, a.id))
        if job_hash is not None:
            q = q.where(a.job_hash == job_hash)

        def go():
            with self.engine.connect() as c:
                return [dict(x._mapping) for x in c.execute(q)]
        return self._retry("read A/B results", go)

    def _same_run(self, conn, meta: dict, figs: list[Figure]) -> int | None:
        """The id of a stored run with this run's start time, key, commit and figures, if any."""
        if not self.sqlite:   # a second writer of the same run waits here for the first one's commit
            conn.execute(text("SELECT pg_advisory_xact_lock(:k)"), {"k": identity.lock_key(meta)})
        r = S.runs.c
        ids = conn.execute(select(r.id).where(r.started_at == meta["started_at"], r.history_key == meta["history_key"],
                                              r.commit_id == meta.get("commit_id", "")).order_by(r.id)).scalars().all()
        stored = self.figures(list(ids), conn)
        return next((i for i in ids if identity.same_figures(figs, stored[i])), None)

    def ingest_run(self, run: Run, source_hash: str | None = None) -> tuple[int, bool]:
        meta = run_meta(run, source_hash or file_hash(run.path))
        if meta["source_path"]:   # where the file is, whatever folder the ingest ran from
            meta["source_path"] = str(Path(meta["source_path"]).resolve())
        return self.ingest(meta, figures_of(run))

    def exclude(self, run_id: int, why: str) -> bool:
        """Marks a run as left out of every history (conbench #474); its figures stay stored."""
        def go():
            with self.engine.begin() as c:
                return c.execute(S.runs.update().where(S.runs.c.id == run_id).values(excluded=why or "excluded")).rowcount
        return bool(self._retry("exclude a run", go))

    def include(self, run_id: int) -> bool:
        """Takes an excluded run back into every history."""
        def go():
            with self.engine.begin() as c:
                return c.execute(S.runs.update().where(S.runs.c.id == run_id).values(excluded="")).rowcount
        return bool(self._retry("take a run back", go))

    # -- reading ---------------------------------------------------------------------------------
    def run(self, run_id: int) -> dict | None:
        """One run's row, or None."""
        def go():
            with self.engine.connect() as c:
                r = c.execute(select(S.runs).where(S.runs.c.id == run_id)).first()
                return dict(r._mapping) if r is not None else None
        return self._retry("read a run", go)

    def probes(self, run_ids: list[int] | None = None) -> dict[int, dict[str, int]]:
        """run id -> probe -> figures it holds (every run, or the given ones)."""
        q = (select(S.figures.c.run_id, S.rows.c.probe, func.count())
             .select_from(S.figures.join(S.rows, S.figures.c.row_id == S.rows.c.id))
             .group_by(S.figures.c.run_id, S.rows.c.probe))
        if run_ids is not None:
            q = q.where(S.figures.c.run_id.in_(run_ids))

        def go():
            out: dict[int, dict[str, int]] = {}
            with self.engine.connect() as c:
                for rid, probe, n in c.execute(q):
                    out.setdefault(rid, {})[probe] = n
            return out
        return self._retry("read probes", go)

    def runs(self, gpu: str | None = None, key: str | None = None) -> list[dict]:
        """Every run (oldest first), optionally of one GPU or one history key."""
        q = select(S.runs).order_by(S.runs.c.started_at, S.runs.c.id)
        if gpu is not None:
            q = q.where(S.runs.c.gpu == gpu)
        if key is not None:
            q = q.where(S.runs.c.history_key == key)

        def go():
            with self.engine.connect() as c:
                return [dict(r._mapping) for r in c.execute(q)]
        return self._retry("read runs", go)

    def count(self) -> tuple[int, int]:
        def go():
            with self.engine.connect() as c:
                return (c.execute(select(func.count()).select_from(S.runs)).scalar(),
                        c.execute(select(func.count()).select_from(S.figures)).scalar())
        return self._retry("count runs", go)

    def figures(self, run_ids: list[int], conn=None) -> dict[int, dict[tuple, Figure]]:
        """run id -> row -> Figure, for the given runs (on `conn`, inside its transaction, if given)."""
        out: dict[int, dict[tuple, Figure]] = {i: {} for i in run_ids}
        if not run_ids:
            return out
        j = S.figures.join(S.rows, S.figures.c.row_id == S.rows.c.id)
        cols = [S.figures.c.run_id, S.rows.c.probe, S.rows.c.variant, S.rows.c.size, S.rows.c.mode,
                S.figures.c.status, S.figures.c.unit, S.figures.c.value, S.figures.c.on_ratio, S.figures.c.median_us,
                S.figures.c.workers_json, S.figures.c.spread, S.figures.c.flags, S.figures.c.kernels,
                S.figures.c.host_state, S.figures.c.baseline, S.figures.c.role, S.figures.c.plan_rule,
                S.figures.c.plan]

        loads = json.loads

        def go():
            with self.engine.connect() if conn is None else nullcontext(conn) as c:
                for i in range(0, len(run_ids), 500):
                    q = select(*cols).select_from(j).where(S.figures.c.run_id.in_(run_ids[i:i + 500]))
                    # unpacked as tuples: named-row access costs more than the query on 40k figures
                    for (rid, probe, variant, size, mode, status, unit, value, on_ratio, median_us, workers,
                         spread, flags, kernels, host_state, baseline, role, plan_rule, plan) in c.execute(q):
                        out[rid][(probe, variant, size, mode)] = Figure(
                            probe, variant, size, mode, status, unit, value, bool(on_ratio), median_us,
                            loads(workers), spread, flags, kernels, host_state, baseline, role, plan_rule, plan)
            return out
        return self._retry("read figures", go) if conn is None else go()


def open_store(url: str | None = None, create: bool = False, **kw) -> Store:
    """The store at `url` (default: default_url(); a plain path is a SQLite file). With `create`
    (what stores runs) an absent or empty one is made with the current schema; without, it is a
    StoreError: reading never leaves a store behind."""
    url = url or default_url()
    if url.lower() in ("off", "none", "0"):
        raise StoreError(f"the store is off ({ENV_URL}={url}); name one with --store URL")
    url = as_url(url)
    p = sqlite_path(url)
    if p is not None and p.is_dir():
        raise StoreError(f"{_shown(url)}: is a folder, not a database file")
    kw["create"] = create
    try:
        return Store(url, **kw)
    except StoreError:
        raise
    except SQLAlchemyError as e:
        raise StoreError(f"{_shown(url)}: cannot open the store ({_one_line(getattr(e, 'orig', e))})") from e
