"""The result store of a campaign directory.

    OUT/campaign.json          the manifest: what the campaign runs (benchmarks, mappings, engines,
                               repeats, seed), the inventory it used (no secrets), its run ids
    OUT/runs/<run id>/         one finished run:
        run.json               what ran: command, environment, mapping, engine, exit code, status
        metrics.json           the parse result: status, reasons, metrics with units
        inputs/                input files as staged (hpccinf.txt, rankfile.txt, job.sh ...)
        outputs/               stdout.txt, stderr.txt and the benchmark's own output files
    OUT/engines/<engine>.json  the routing-engine check made before that engine's runs
    OUT/.partial/              runs being written; a run appears in runs/ only complete, by rename

A run directory is written under .partial/ and renamed into runs/ in one step, so an
interrupted campaign never leaves a half-written run where a finished one is expected.
"""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import uuid
from pathlib import Path

from ibtool.errors import InputError
from ibtool.formats import atomic_write, read_input

MANIFEST = "campaign.json"
COMPARED = ("benchmarks", "mappings", "engines", "repeat", "seed")


def write_json(path: Path, data) -> None:
    with atomic_write(path) as fh:  # the store's lock keeps a second process from the same file
        fh.write(json.dumps(data, indent=2, sort_keys=True, default=str) + "\n")


RUN_KEYS = ("run_id", "engine", "benchmark", "type", "mapping", "repeat", "status")


def read_json(path: Path, required: tuple[str, ...] = ()) -> dict:
    """A JSON object the store wrote; anything else (edited, truncated) is an input error naming it."""
    try:
        data = json.loads(read_input(path))  # a FIFO or device in a campaign is refused, not read
    except (ValueError, OSError) as e:  # JSONDecodeError and UnicodeDecodeError are ValueErrors
        raise InputError(f"unreadable campaign file ({type(e).__name__}: {e})", path=str(path)) from None
    if not isinstance(data, dict):
        raise InputError(f"a JSON object expected, got {type(data).__name__}", path=str(path))
    missing = [k for k in required if k not in data]
    if missing:
        raise InputError(f"not written by ibtool bench: no {', '.join(missing)}", path=str(path))
    return data


def changes(old: dict, new: dict) -> list[str]:
    """'KEY: OLD stored, NEW now' for every key whose value differs."""
    return [f"{k}: {json.dumps(old.get(k))} in the stored campaign, {json.dumps(new.get(k))} now"
            for k in sorted(set(old) | set(new)) if old.get(k) != new.get(k)]


class Store:
    def __init__(self, out: str | Path):
        self.out = Path(out)
        self.runs_dir = self.out / "runs"
        self.partial = self.out / ".partial"
        self.engines_dir = self.out / "engines"

    def open(self, manifest: dict, new_parameters: bool = False) -> dict:
        """Create the campaign, or resume it when OUT holds the same campaign; returns the manifest.
        The directory stays locked (flock) until this process ends or close() is called."""
        try:
            self.out.mkdir(parents=True, exist_ok=True)
            self._lock = open(self.out / ".lock", "w")
        except OSError as e:
            raise InputError(f"cannot use as campaign directory: {e.strerror or e}", path=str(self.out)) from None
        try:
            fcntl.flock(self._lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            self._lock.close()
            raise InputError("another `ibtool bench run` is using this campaign directory", path=str(self.out)) from None
        try:
            return self._open(manifest, new_parameters)
        except BaseException:
            self.close()
            raise

    def peek(self, manifest: dict, new_parameters: bool = False) -> dict | None:
        """The manifest `open` would write (None for a new campaign), checking nothing changed."""
        path = self.out / MANIFEST
        if not path.exists():
            return None
        old = read_json(path)
        diff = [k for k in COMPARED if old.get(k) != manifest.get(k)]
        if diff:
            raise InputError(f"{self.out} holds another campaign (different {', '.join(diff)}); "
                             "use a new --out directory, or the same options to resume it")
        gens = old.get("generations") or [{"generation": 1, "measures": old.get("measures", manifest.get("measures")),
                                           "inventory": old.get("inventory"), "started": old.get("created")}]
        gens = [{k: v for k, v in g.items() if k != "started_now"} for g in gens]
        changed = changes(gens[-1]["measures"] or {}, manifest.get("measures", {}))
        if changed and not new_parameters:
            more = f" (also changed: {', '.join(c.split(':', 1)[0] for c in changed[1:])})" if len(changed) > 1 else ""
            raise InputError(f"{self.out}: the inventory changes what the runs measure: {changed[0]}{more}; "
                             "resuming would mix parameters. Resume with the inventory the campaign started "
                             "with, or add --new-parameters to start a new generation of it (recorded, "
                             "reported separately), or use a new --out")
        if changed:
            gens.append({"generation": len(gens) + 1, "measures": manifest["measures"],
                         "inventory": manifest.get("inventory"), "started": manifest.get("created"),
                         "changed": changed, "started_now": True})
        return {**manifest, "campaign_id": old["campaign_id"], "created": old["created"], "generations": gens,
                "generation": gens[-1]["generation"]}

    def _open(self, manifest: dict, new_parameters: bool = False) -> dict:
        path = self.out / MANIFEST
        resumed = self.peek(manifest, new_parameters)
        if resumed is not None:
            manifest = resumed
        else:
            manifest = {**manifest, "campaign_id": uuid.uuid4().hex[:12], "generation": 1,
                        "generations": [{"generation": 1, "measures": manifest.get("measures", {}),
                                         "inventory": manifest.get("inventory"), "started": manifest.get("created")}]}
        for d in (self.runs_dir, self.engines_dir):
            d.mkdir(exist_ok=True)
        if self.partial.exists():
            shutil.rmtree(self.partial)  # runs interrupted last time: redone, never half-kept
        self.partial.mkdir()
        write_json(path, {**manifest, "generations": [{k: v for k, v in g.items() if k != "started_now"}
                                                       for g in manifest["generations"]]})
        return manifest

    def close(self) -> None:
        lock = getattr(self, "_lock", None)
        if lock is not None:
            lock.close()  # releases the flock
            self._lock = None

    def manifest(self) -> dict:
        path = self.out / MANIFEST
        if not path.exists():
            raise InputError(f"not a campaign directory (no {MANIFEST})", path=str(self.out))
        return read_json(path, COMPARED + ("runs",))

    def status(self, run_id: str) -> str | None:
        p = self.runs_dir / run_id / "run.json"
        return read_json(p).get("status") if p.exists() else None

    def begin(self, run_id: str) -> Path:
        d = self.partial / f"{run_id}.{uuid.uuid4().hex[:8]}"
        (d / "inputs").mkdir(parents=True)
        (d / "outputs").mkdir()
        return d

    def commit(self, tmp: Path, run_id: str) -> Path:
        final = self.runs_dir / run_id
        if final.exists():  # a failed run being redone (--retry-failed): swap, then drop the old one
            old = self.partial / f"{run_id}.old.{uuid.uuid4().hex[:8]}"
            os.rename(final, old)
            os.rename(tmp, final)
            shutil.rmtree(old)
        else:
            os.rename(tmp, final)
        return final

    def runs(self) -> list[dict]:
        """Every finished run: run.json with its parse result under 'result'."""
        out = []
        for d in sorted(self.runs_dir.glob("*/run.json")):
            run = read_json(d, RUN_KEYS)
            m = d.parent / "metrics.json"
            run["result"] = read_json(m) if m.exists() else {}
            run["dir"] = str(d.parent)
            out.append(run)
        return out

    def save_engine(self, engine: str, outcome: dict) -> None:
        write_json(self.engines_dir / f"{engine}.json", outcome)
