"""The watcher's store: one SQLite file in WAL mode, one transaction a round.

A round is written whole or not at all: its counters, link changes, events and its row in
`rounds` commit together, so a watcher killed (kill -9, a power cut with the disk's own
guarantees) in the middle of a round loses that round and nothing before it; a reader (`ibtool
watch events`, `report`, the exporter of another process) never sees half a round. One writer
a store (a lock file beside it); any number of readers.

Schema (`FORMAT` ibtool-watch/1; docs/watch.md has it with examples):

    meta(key, value)                      format, created, the plan, the retention in force
    rounds(id, t, seconds, mads, devices, ports, cables, failed, error)
                                          one row a round: when (epoch s), how long, how many MADs
    ports(id, device, port)               every port ever seen, by the plan's name of its device
    counters(id, name)                    counter names, as perfquery prints them
    samples(port, counter, round, value)  a counter's value when it changed (error counters),
                                          in the first round of each hour (TRAFFIC and
                                          PortXmitWait, which change all the time), and whenever
                                          it went down (a reset)
    hourly(port, counter, hour, delta, last)
                                          samples older than the raw window, folded per hour:
                                          the increase within the hour (a reset counts its new
                                          value) and the last value
    links(port, round, up, state, width, speed, peer)
                                          a port's link when it changed: physically up, PortState,
                                          lanes, speed name, the port at the other end
    events(id, round, t, kind, cable, device, text, detail)
                                          what `ibtool watch events` prints (detail: JSON)
    state(key, value)                     the watcher's last view (JSON): devices present, cables
                                          up and their rates, the SM, counters over threshold,
                                          ports it reset; read back when it starts again

Retention: raw rows for `raw_days` (default 7), then per-hour aggregates; at most `max_bytes`
(default 2 GiB): beyond it the oldest aggregates and events go first.
"""

from __future__ import annotations

import fcntl
import json
import os
import sqlite3
import sys
import time
from pathlib import Path

from ibtool.errors import EnvironmentProblem, InputError

FORMAT = "ibtool-watch/1"
HOURLY = {"PortXmitData", "PortRcvData", "PortXmitPkts", "PortRcvPkts", "PortUnicastXmitPkts", "PortUnicastRcvPkts",
          "PortMulticastXmitPkts", "PortMulticastRcvPkts", "PortXmitWait"}  # stored once an hour
RAW_DAYS = 7.0
MAX_BYTES = 2 << 30
_I64 = 1 << 63

SCHEMA = """
CREATE TABLE IF NOT EXISTS meta(key TEXT PRIMARY KEY, value TEXT);
CREATE TABLE IF NOT EXISTS rounds(id INTEGER PRIMARY KEY, t REAL NOT NULL, seconds REAL, mads INTEGER,
    devices INTEGER, ports INTEGER, cables INTEGER, failed INTEGER, error TEXT);
CREATE INDEX IF NOT EXISTS rounds_t ON rounds(t);
CREATE TABLE IF NOT EXISTS ports(id INTEGER PRIMARY KEY, device TEXT NOT NULL, port INTEGER NOT NULL,
    UNIQUE(device, port));
CREATE TABLE IF NOT EXISTS counters(id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE);
CREATE TABLE IF NOT EXISTS samples(port INTEGER NOT NULL, counter INTEGER NOT NULL, round INTEGER NOT NULL,
    value INTEGER NOT NULL, PRIMARY KEY(port, counter, round)) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS samples_round ON samples(round);
CREATE TABLE IF NOT EXISTS hourly(port INTEGER NOT NULL, counter INTEGER NOT NULL, hour INTEGER NOT NULL,
    delta INTEGER NOT NULL, last INTEGER NOT NULL, PRIMARY KEY(port, counter, hour)) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS links(port INTEGER NOT NULL, round INTEGER NOT NULL, up INTEGER NOT NULL,
    state INTEGER, width INTEGER, speed TEXT, peer INTEGER, PRIMARY KEY(port, round)) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS events(id INTEGER PRIMARY KEY, round INTEGER, t REAL NOT NULL, kind TEXT NOT NULL,
    cable TEXT, device TEXT, text TEXT NOT NULL, detail TEXT);
CREATE INDEX IF NOT EXISTS events_t ON events(t);
CREATE TABLE IF NOT EXISTS state(key TEXT PRIMARY KEY, value TEXT);
"""


def _i64(v: int) -> int:
    """A counter as SQLite's signed 64-bit integer (a 64-bit counter past 2^63 wraps to negative)."""
    return v - (1 << 64) if v >= _I64 else v


def _u64(v: int) -> int:
    return v + (1 << 64) if v < 0 else v


class Store:
    """A watcher store. `Store(path, write=True)` takes the one writer's lock (another live
    watcher on the same file is refused); readers open it read-only."""

    def __init__(self, path: str | Path, write: bool = False, raw_days: float = RAW_DAYS, max_bytes: int = MAX_BYTES):
        self.path = Path(path)
        self.write = write
        self.raw_days, self.max_bytes = raw_days, max_bytes
        self._lock = None
        if write:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._lock = open(self.path.with_name(self.path.name + ".lock"), "w")
            try:
                fcntl.flock(self._lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                raise InputError("another watcher writes this store (its lock is held)", path=str(self.path)) from None
            fresh = not self.path.exists() or self.path.stat().st_size == 0
            try:
                self.db = sqlite3.connect(self.path, isolation_level=None, timeout=30)
                if fresh:
                    self.db.execute("PRAGMA auto_vacuum = INCREMENTAL")  # before the first table: space given back
                self.db.execute("PRAGMA journal_mode = WAL")
                self.db.execute("PRAGMA synchronous = NORMAL")  # WAL: a committed round survives a killed process
                self.db.execute("PRAGMA journal_size_limit = 67108864")
                self.db.executescript(SCHEMA)
                if fresh:
                    self._meta({"format": FORMAT, "created": str(time.time())})
                self._check_format()
            except sqlite3.DatabaseError as e:
                raise InputError(f"not a watcher store ({e})", path=str(self.path)) from None
        else:
            if not self.path.is_file():
                raise InputError("no such store (`ibtool watch run --store FILE` writes one)", path=str(self.path))
            try:
                self.db = sqlite3.connect(f"file:{self.path}?mode=ro", uri=True, isolation_level=None, timeout=30)
                self._check_format()
            except sqlite3.DatabaseError as e:
                raise InputError(f"not a watcher store ({e})", path=str(self.path)) from None
        self._ports: dict[tuple[str, int], int] = {}
        self._counters: dict[str, int] = {}
        self._last: dict[tuple[int, int], tuple[int, float]] = {}  # (port, counter) -> last stored value, its time
        self._links: dict[int, tuple] = {}
        self._loaded = False
        self._retained: int | None = None  # the hour retention last folded
        self._seen: dict[int, tuple] = {}  # port -> (hour, error counters) of the round that last stored it

    def _check_format(self) -> None:
        try:
            row = self.db.execute("SELECT value FROM meta WHERE key = 'format'").fetchone()
        except sqlite3.OperationalError:
            row = None
        if not row or row[0] != FORMAT:
            raise InputError(f"not a watcher store of this version (format {row[0] if row else 'missing'}, "
                             f"expected {FORMAT})", path=str(self.path))

    def _meta(self, kv: dict) -> None:
        self.db.executemany("INSERT OR REPLACE INTO meta(key, value) VALUES (?, ?)", list(kv.items()))

    def close(self) -> None:
        try:
            self.db.close()
        finally:
            if self._lock is not None:
                self._lock.close()
                self._lock = None

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # ------------------------------------------------------------------ ids and the last view
    def _load(self) -> None:
        if self._loaded:
            return
        self._ports = {(d, p): i for i, d, p in self.db.execute("SELECT id, device, port FROM ports")}
        self._counters = {n: i for i, n in self.db.execute("SELECT id, name FROM counters")}
        times = dict(self.db.execute("SELECT id, t FROM rounds"))
        # SQLite: with max(), the bare columns are those of the row holding the maximum
        for port, counter, value, rnd in self.db.execute(
                "SELECT port, counter, value, max(round) FROM samples GROUP BY port, counter"):
            self._last[port, counter] = (_u64(value), times.get(rnd, 0.0))
        for port, up, state, width, speed, peer, _ in self.db.execute(
                "SELECT port, up, state, width, speed, peer, max(round) FROM links GROUP BY port"):
            self._links[port] = (up, state, width, speed, peer)
        self._loaded = True

    def port_id(self, device: str, port: int) -> int:
        k = (device, port)
        i = self._ports.get(k)
        if i is None:
            i = self.db.execute("INSERT INTO ports(device, port) VALUES (?, ?)", k).lastrowid
            self._ports[k] = i
        return i

    def counter_id(self, name: str) -> int:
        i = self._counters.get(name)
        if i is None:
            i = self.db.execute("INSERT INTO counters(name) VALUES (?)", (name,)).lastrowid
            self._counters[name] = i
        return i

    def last_counters(self) -> dict[tuple[str, int], dict[str, int]]:
        """The last stored value of every port's counters ((device, port) -> {name: value})."""
        self._load()
        names = {i: n for n, i in self._counters.items()}
        ports = {i: k for k, i in self._ports.items()}
        out: dict = {}
        for (p, c), (v, _) in self._last.items():
            out.setdefault(ports[p], {})[names[c]] = v
        return out

    def state(self) -> dict:
        return {k: json.loads(v) for k, v in self.db.execute("SELECT key, value FROM state")}

    # ------------------------------------------------------------------ writing a round
    def write_round(self, rnd, events: list[dict], state: dict | None, reset: set | None = None) -> int:
        """Write one round (a collector.Round), its events and (when changed) the watcher's view,
        in one transaction; returns the round's id. `reset`: ports whose counters went down since
        the round before (cleared by someone, or by the watcher): every counter of theirs that
        went down is stored, the traffic counters too."""
        self._load()
        db = self.db
        reset = reset or set()
        # the tests' hook: IBTOOL_WATCH_HOLD_WRITE=N:S holds round N's transaction open S seconds, for a
        # kill -9 or a SIGTERM to land in the middle of writing it
        hold_n, _, hold_s = os.environ.get("IBTOOL_WATCH_HOLD_WRITE", "").partition(":")
        db.execute("BEGIN IMMEDIATE")
        try:
            rid = db.execute("INSERT INTO rounds(t, seconds, mads, devices, ports, cables, failed, error) "
                             "VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                             (rnd.t, rnd.seconds, rnd.mads, len(rnd.devices), rnd.counted, len(rnd.cables),
                              len(rnd.failed), rnd.error)).lastrowid
            hour = int(rnd.t // 3600)
            rows = []
            for (dev, pn), port in rnd.ports.items():
                if not port.counters:
                    continue
                pid = self.port_id(dev, pn)
                errors = tuple(v for n, v in port.counters.items() if n not in HOURLY)
                seen = self._seen.get(pid)
                if seen is not None and seen[0] == hour and seen[1] == errors and (dev, pn) not in reset:
                    continue  # no error counter moved, the hour's traffic is stored (most ports, most rounds)
                self._seen[pid] = (hour, errors)
                for name, v in port.counters.items():
                    cid = self.counter_id(name)
                    last = self._last.get((pid, cid))
                    if last is not None:
                        lv, lt = last
                        if v == lv or (name in HOURLY and v > lv and int(lt // 3600) == hour):
                            continue
                    rows.append((pid, cid, rid, _i64(v)))
                    self._last[pid, cid] = (v, rnd.t)
            if rows:
                db.executemany("INSERT INTO samples(port, counter, round, value) VALUES (?, ?, ?, ?)", rows)
            links = []
            peers = {}
            for key, (a, b) in rnd.cables.items():
                peers[a], peers[b] = b, a
            for (dev, pn), port in rnd.ports.items():
                pid = self.port_id(dev, pn)
                peer = peers.get((dev, pn))
                now = (1 if peer else 0, port.state, port.width, port.speed, self.port_id(*peer) if peer else None)
                if self._links.get(pid) != now:
                    links.append((pid, rid, *now))
                    self._links[pid] = now
            if links:
                db.executemany("INSERT INTO links(port, round, up, state, width, speed, peer) VALUES (?, ?, ?, ?, ?, ?, ?)",
                               links)
            if events:
                db.executemany("INSERT INTO events(round, t, kind, cable, device, text, detail) VALUES (?, ?, ?, ?, ?, ?, ?)",
                               [(rid, rnd.t, e["kind"], e.get("cable"), e.get("device"), e["text"],
                                 json.dumps({k: v for k, v in e.items() if k not in ("kind", "text", "t", "round")}))
                                for e in events])
            if state is not None:
                db.executemany("INSERT OR REPLACE INTO state(key, value) VALUES (?, ?)",
                               [(k, json.dumps(v)) for k, v in state.items()])
            if hold_n == str(rid):
                print(f"watch: holding round {rid} open for {hold_s} s", file=sys.stderr, flush=True)
                time.sleep(float(hold_s))
            db.execute("COMMIT")
        except BaseException:
            if db.in_transaction:
                db.execute("ROLLBACK")
            self._loaded = False  # the in-memory view may hold the rolled-back round: read it again
            self._last.clear()
            self._links.clear()
            self._seen.clear()
            raise
        return rid

    # ------------------------------------------------------------------ retention and size
    def retain(self, now: float) -> dict:
        """Fold samples older than the raw window into hourly rows, drop old rounds and link
        rows (a port's last one stays: it is where the next change is measured from), then keep
        the file under max_bytes. Run it every round: it folds once an hour (of the rounds' time),
        and only measures the file in between."""
        cut = now - self.raw_days * 86400
        db = self.db
        old = None
        if int(now // 3600) != self._retained:
            self._retained = int(now // 3600)
            old = db.execute("SELECT max(id) FROM rounds WHERE t < ?", (cut,)).fetchone()[0]
        done = {"folded": 0, "dropped": 0}
        if old is not None:
            db.execute("BEGIN IMMEDIATE")
            try:
                done["folded"] = self._fold(old)
                db.execute("DELETE FROM links WHERE round <= ? AND (port, round) NOT IN "
                           "(SELECT port, max(round) FROM links GROUP BY port)", (old,))
                db.execute("DELETE FROM rounds WHERE id <= ? AND id NOT IN (SELECT max(round) FROM samples "
                           "GROUP BY port, counter UNION SELECT max(round) FROM links GROUP BY port)", (old,))
                db.execute("COMMIT")
            except BaseException:
                if db.in_transaction:
                    db.execute("ROLLBACK")
                raise
        done["dropped"] = self._bound()
        return done

    def _fold(self, old: int) -> int:
        """Samples of rounds up to `old` (but each key's newest) -> hourly increases and last values."""
        db = self.db
        prev = {(p, c): last for p, c, last, _ in db.execute(
            "SELECT port, counter, last, max(hour) FROM hourly GROUP BY port, counter")}
        keep = {(p, c, r) for p, c, r in db.execute("SELECT port, counter, max(round) FROM samples GROUP BY port, counter")}
        acc: dict[tuple[int, int, int], list[int]] = {}
        gone = []
        for p, c, r, v, t in db.execute("SELECT s.port, s.counter, s.round, s.value, r.t FROM samples s "
                                        "JOIN rounds r ON r.id = s.round WHERE s.round <= ? "
                                        "ORDER BY s.port, s.counter, s.round", (old,)):
            v = _u64(v)
            base = prev.get((p, c))
            inc = 0 if base is None else (v - base if v >= base else v)
            prev[p, c] = v
            a = acc.setdefault((p, c, int(t // 3600)), [0, v])
            a[0] += inc
            a[1] = v
            if (p, c, r) not in keep:
                gone.append((p, c, r))
        db.executemany("INSERT INTO hourly(port, counter, hour, delta, last) VALUES (?, ?, ?, ?, ?) "
                       "ON CONFLICT(port, counter, hour) DO UPDATE SET delta = delta + excluded.delta, "
                       "last = excluded.last", [(p, c, h, d, _i64(v)) for (p, c, h), (d, v) in acc.items()])
        db.executemany("DELETE FROM samples WHERE port = ? AND counter = ? AND round = ?", gone)
        return len(gone)

    def size(self) -> int:
        pages, size = (self.db.execute(f"PRAGMA {x}").fetchone()[0] for x in ("page_count", "page_size"))
        return pages * size

    def _bound(self) -> int:
        """Over max_bytes: drop the oldest hourly rows and events (a tenth of the hours at a
        time), give the pages back."""
        dropped = 0
        while self.size() > self.max_bytes:
            hours = self.db.execute("SELECT min(hour), max(hour) FROM hourly").fetchone()
            evs = self.db.execute("SELECT min(t), max(t) FROM events").fetchone()
            if hours[0] is None and evs[0] is None:
                break
            self.db.execute("BEGIN IMMEDIATE")
            if hours[0] is not None:
                upto = hours[0] + max(1, (hours[1] - hours[0]) // 10)
                dropped += self.db.execute("DELETE FROM hourly WHERE hour <= ?", (upto,)).rowcount
                self.db.execute("DELETE FROM events WHERE t < ?", (upto * 3600,))
            else:
                upto = evs[0] + max(1.0, (evs[1] - evs[0]) / 10)
                dropped += self.db.execute("DELETE FROM events WHERE t <= ?", (upto,)).rowcount
            self.db.execute("COMMIT")
            self.db.execute("PRAGMA incremental_vacuum")
            if hours[0] is not None and hours[0] == hours[1] and evs[0] is None:
                break
        if dropped:
            self.db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        return dropped

    # ------------------------------------------------------------------ reading
    def meta(self) -> dict[str, str]:
        return dict(self.db.execute("SELECT key, value FROM meta"))

    def set_meta(self, **kv: str | None) -> None:
        """Record these (a None removes the key)."""
        self._meta({k: v for k, v in kv.items() if v is not None})
        self.db.executemany("DELETE FROM meta WHERE key = ?", [(k,) for k, v in kv.items() if v is None])

    def summary(self) -> dict:
        n = self.db.execute("SELECT count(*) FROM rounds").fetchone()[0]
        kinds = dict(self.db.execute("SELECT kind, count(*) FROM events GROUP BY kind"))
        wal = self.path.with_name(self.path.name + "-wal")
        return {"store": str(self.path), "rounds": n, "last_round": self.last_round(), "events": kinds,
                "bytes": self.size() + (wal.stat().st_size if wal.exists() else 0), "meta": self.meta()}

    def rounds(self, since: float | None = None) -> list[tuple[int, float]]:
        q = "SELECT id, t FROM rounds" + (" WHERE t >= ?" if since is not None else "") + " ORDER BY id"
        return list(self.db.execute(q, (since,) if since is not None else ()))

    def last_round(self) -> dict | None:
        row = self.db.execute("SELECT id, t, seconds, mads, devices, ports, cables, failed, error FROM rounds "
                              "ORDER BY id DESC LIMIT 1").fetchone()
        if row is None:
            return None
        return dict(zip(("id", "t", "seconds", "mads", "devices", "ports", "cables", "failed", "error"), row))

    def events(self, since: float | None = None, kinds: tuple[str, ...] = ()) -> list[dict]:
        q = "SELECT id, round, t, kind, cable, device, text, detail FROM events WHERE 1"
        args: list = []
        if since is not None:  # the last N hours: an event exactly N hours old is not in them
            q += " AND t > ?"
            args.append(since)
        if kinds:
            q += f" AND kind IN ({','.join('?' * len(kinds))})"
            args += list(kinds)
        out = []
        for i, r, t, kind, cable, device, text, detail in self.db.execute(q + " ORDER BY id", args):
            d = json.loads(detail) if detail else {}
            out.append({"id": i, "round": r, "t": t, "kind": kind, "cable": cable, "device": device, "text": text, **d})
        return out

    def series(self, since: float, counters: set[str] | None = None) -> dict[tuple[str, int], dict[str, list]]:
        """Each port's counters from `since` on, as [(t, value)] change points (raw samples, and
        hourly aggregates' last values before the raw window), plus the value before `since`
        (t = since) when known: (device, port) -> {name: [(t, v), ...]}."""
        ports = {i: (d, p) for i, d, p in self.db.execute("SELECT id, device, port FROM ports")}
        names = {i: n for i, n in self.db.execute("SELECT id, name FROM counters")}
        want = {i for i, n in names.items() if counters is None or n in counters}
        out: dict = {}

        def add(p, c, t, v):
            if c in want and p in ports:
                out.setdefault(ports[p], {}).setdefault(names[c], []).append((t, _u64(v)))
        for p, c, h, last in self.db.execute("SELECT port, counter, hour, last FROM hourly WHERE hour >= ? "
                                             "ORDER BY port, counter, hour", (int(since // 3600),)):
            add(p, c, (h + 1) * 3600.0, last)
        for p, c, t, v in self.db.execute("SELECT s.port, s.counter, r.t, s.value FROM samples s JOIN rounds r "
                                          "ON r.id = s.round WHERE r.t >= ? ORDER BY s.port, s.counter, s.round",
                                          (since,)):
            add(p, c, t, v)
        for p, c, t, v in self.db.execute("SELECT s.port, s.counter, max(r.t), s.value FROM samples s JOIN rounds r "
                                          "ON r.id = s.round WHERE r.t < ? GROUP BY s.port, s.counter", (since,)):
            if c in want and p in ports and ports[p] in out and names[c] in out[ports[p]]:
                out[ports[p]][names[c]].insert(0, (since, _u64(v)))
        for d in out.values():
            for name in d:
                d[name].sort()
        return out


def open_for_reading(path: str | Path) -> Store:
    try:
        return Store(path)
    except sqlite3.Error as e:
        raise EnvironmentProblem(f"cannot read the store: {e}", path=str(path)) from None
