"""OpenSM 3.3.23's configuration options, checked before ibtool writes one into an opensm.conf.

OpenSM reads its configuration leniently and says so only in its log: an unknown key is skipped
("Unrecognized token"), a boolean is TRUE or else FALSE (`true` is FALSE), a number beyond its
field is dropped ("value out of range") and some are replaced by the default after parsing
(`lmc 99` routes with LMC 0). So every option that ends in an opensm.conf ibtool writes (`topo`,
`sim run --conf` and `--opensm-config`, fault scenarios, `bench` on an emulated fabric, `plugin
install --plan`) goes through `check()` first: one line naming the option and OpenSM's range.

The table is OpenSM 3.3.23's own (opensm/osm_subnet.c: `opt_tbl` and the ranges of its parse
functions, `osm_subn_verify_config` and the qos checks; opensm/main.c for the ranges its command
line enforces; include/iba/ib_types.h for the PortInfo fields the values are written into). The
tests compare its keys with what Debian's `opensm -c` writes.
"""

from __future__ import annotations

import difflib
import re
from pathlib import Path

from ibtool.errors import InputError

BUILTIN_ENGINES = ("minhop", "updn", "dnup", "file", "ftree", "lash", "dor", "torus-2QoS", "nue", "dfsssp", "sssp")
PLUGIN_ENGINES = ("hdor",)  # external engines ibtool ships as OpenSM event plugins
# engines that give each path its own SL (OpenSM's path_sl hook) and so spread routes over VLs: their
# deadlock freedom is judged with the path SLs, which `sim run` collects for them by default
SL_ENGINES = ("hdor", "dfsssp", "lash", "nue", "torus-2QoS")


def parse_engines(spec: str, option: str = "--engine") -> list[str]:
    """'hdor,minhop' -> ['hdor', 'minhop'], refusing names OpenSM would silently ignore (and an
    empty list: OpenSM would route with minhop)."""
    names = [e for e in re.split(r"[,\s]+", spec.strip()) if e]
    if not names:
        raise InputError(f"{option}: no routing engine given")
    known = BUILTIN_ENGINES + PLUGIN_ENGINES + ("no_fallback",)
    for e in names:
        if e not in known:
            raise InputError(f"{option}: unknown routing engine {e!r} (known: {', '.join(known)})")
    return names


U8, U16, U32, U64 = (0, 0xFF), (0, 0xFFFF), (0, 0xFFFFFFFF), (0, (1 << 64) - 1)
BOOL, TEXT, FILE, RAW = "bool", "text", "file", "raw"

# key -> range (lo, hi) of a number, a set of the numbers or words OpenSM takes, or a kind:
# BOOL (TRUE/FALSE), TEXT (any string), FILE (a path OpenSM opens; relative to the conf's
# directory when ibtool hands the conf to OpenSM), RAW (a structured value OpenSM parses itself)
OPTIONS: dict[str, object] = {
    "guid": U64, "m_key": U64, "sm_key": U64, "sa_key": U64, "subnet_prefix": U64,
    "m_key_lease_period": U16,
    "m_key_protection_level": (0, 3),  # verify_config: > 3 is set to 2
    "m_key_lookup": BOOL,
    "sweep_interval": U32,
    "max_wire_smps": (0, 0x7FFFFFFF), "max_wire_smps2": (0, 0x7FFFFFFF),  # verify_config
    "max_smps_timeout": U32,
    "console": {"off", "local", "loopback"},  # Debian's build: no socket console
    "console_port": U16,
    "transaction_timeout": U32, "transaction_retries": U32, "long_transaction_timeout": U32,
    "max_msg_fifo_timeout": U32,
    "sm_priority": (0, 15),  # verify_config; main.c -p
    "lmc": (0, 7),  # verify_config: lmc > 7 is replaced by 0; main.c -l
    "lmc_esp0": BOOL,
    "max_op_vls": (1, 5),  # PortInfo:OperationalVLs codes 1..5; 0 makes OpenSM shift by -1
    "force_link_speed": set(range(0, 8)) | {15},  # verify_config
    "force_link_speed_ext": set(range(0, 8)) | {30, 31},  # verify_config
    "force_link_width": set(range(0, 32)) | {255},  # verify_config
    "fdr10": (0, 2),  # verify_config
    "reassign_lids": BOOL, "ignore_other_sm": BOOL, "single_thread": BOOL, "disable_multicast": BOOL,
    "subnet_timeout": (0, 31),  # ib_port_info_set_timeout: a 5-bit field (CL_ASSERT <= 0x1F)
    "packet_life_time": (0, 31),  # SwitchInfo LifeTimeValue, 5 bits
    "vl_stall_count": (0, 7), "leaf_vl_stall_count": (0, 7),  # PortInfo VLStallCount, 3 bits
    "head_of_queue_lifetime": (0, 31), "leaf_head_of_queue_lifetime": (0, 31),  # HOQLife, 5 bits
    "local_phy_errors_threshold": (0, 15), "overrun_errors_threshold": (0, 15),  # 4 bits each
    "use_mfttop": BOOL,
    "sminfo_polling_timeout": U32, "polling_retry_number": U32,
    "force_heavy_sweep": BOOL,
    "port_prof_ignore_file": FILE, "hop_weights_file": FILE, "dimn_ports_file": FILE,
    "port_search_ordering_file": FILE,
    "port_profile_switch_nodes": BOOL, "sweep_on_trap": BOOL,
    "routing_engine": "engines",
    "avoid_throttled_links": BOOL, "connect_roots": BOOL, "use_ucast_cache": BOOL,
    "log_file": FILE, "log_max_size": U32, "log_flags": U8,
    "force_log_flush": BOOL, "accum_log_file": BOOL,
    "partition_config_file": FILE,
    "no_partition_enforcement": BOOL,
    "part_enforce": {"both", "in", "out", "off"},  # verify_config
    "allow_both_pkeys": BOOL, "keep_pkey_indexes": BOOL,
    "sm_assigned_guid": U8,
    "qos": BOOL, "qos_policy_file": FILE, "suppress_sl2vl_mad_status_errors": BOOL,
    "dump_files_dir": FILE, "lid_matrix_dump_file": FILE, "lfts_file": FILE,
    "root_guid_file": FILE, "cn_guid_file": FILE, "io_guid_file": FILE,
    "port_shifting": BOOL, "scatter_ports": U32, "max_reverse_hops": U16,
    "ids_guid_file": FILE, "guid_routing_order_file": FILE, "guid_routing_order_no_scatter": BOOL,
    "sa_db_file": FILE, "sa_db_dump": BOOL, "torus_config": FILE,
    "do_mesh_analysis": BOOL, "exit_on_fatal": BOOL, "honor_guid2lid_file": BOOL, "daemon": BOOL,
    "sm_inactive": BOOL, "babbling_port_policy": BOOL, "drop_event_subscriptions": BOOL,
    "ipoib_mcgroup_creation_validation": BOOL, "mcgroup_join_validation": BOOL,
    "use_original_extended_sa_rates_only": BOOL, "use_optimized_slvl": BOOL, "fsync_high_avail_files": BOOL,
    "perfmgr": BOOL, "perfmgr_redir": BOOL,
    "perfmgr_sweep_time_s": (1, 0xFFFF), "perfmgr_max_outstanding_queries": (1, 0xFFFFFFFF),  # verify_config
    "perfmgr_ignore_cas": BOOL, "event_db_dump_file": FILE, "perfmgr_rm_nodes": BOOL,
    "perfmgr_log_errors": BOOL, "perfmgr_query_cpi": BOOL, "perfmgr_xmit_wait_log": BOOL,
    "perfmgr_xmit_wait_threshold": U32,
    "event_plugin_name": TEXT, "event_plugin_options": TEXT,
    "node_name_map_name": FILE,
    "congestion_control": BOOL, "cc_key": U64, "cc_max_outstanding_mads": U32,
    "cc_sw_cong_setting_control_map": U32,
    "cc_sw_cong_setting_victim_mask": RAW, "cc_sw_cong_setting_credit_mask": RAW,
    "cc_sw_cong_setting_threshold": (0, 15),  # CongestionSetting Threshold, 4 bits
    "cc_sw_cong_setting_packet_size": U8,
    "cc_sw_cong_setting_credit_starvation_threshold": (0, 15),
    "cc_sw_cong_setting_credit_starvation_return_delay": RAW,
    "cc_sw_cong_setting_marking_rate": U16,
    "cc_ca_cong_setting_port_control": U16, "cc_ca_cong_setting_control_map": U16,
    "cc_ca_cong_setting_ccti_timer": RAW, "cc_ca_cong_setting_ccti_increase": RAW,
    "cc_ca_cong_setting_trigger_threshold": RAW, "cc_ca_cong_setting_ccti_min": RAW, "cc_cct": RAW,
    "enable_quirks": BOOL, "no_clients_rereg": BOOL,
    "prefix_routes_file": FILE,
    "consolidate_ipv6_snm_req": BOOL,
    "lash_start_vl": (0, 15), "sm_sl": (0, 15), "nue_max_num_vls": (0, 15),  # main.c: < IB_MAX_NUM_VLS
    "nue_include_switches": BOOL,
    "log_prefix": TEXT,
    "per_module_logging_file": FILE,
    "quasi_ftree_indexing": BOOL,
}
for _set in ("qos", "qos_ca", "qos_sw0", "qos_swe", "qos_rtr"):  # subn_verify_qos_set
    OPTIONS.update({f"{_set}_max_vls": (0, 15),  # 0: OpenSM's default
                    f"{_set}_high_limit": (-1, 255),  # -1: OpenSM's default
                    f"{_set}_vlarb_high": "vlarb", f"{_set}_vlarb_low": "vlarb", f"{_set}_sl2vl": "sl2vl"})

FILE_KEYS = frozenset(k for k, v in OPTIONS.items() if v == FILE)

_NUMBER = re.compile(r"-?(0[xX][0-9a-fA-F]+|0[0-7]*|[1-9][0-9]*)")


def _number(text: str) -> int | None:
    """A number as OpenSM's strtoul/strtol(..., 0) reads it: 0x hex, 0 octal, else decimal."""
    m = _NUMBER.fullmatch(text)
    if not m:
        return None
    body = m.group(1)
    value = int(body, 16) if body[:2].lower() == "0x" else int(body, 8) if body.startswith("0") else int(body)
    return -value if text.startswith("-") else value


def _list_of(text: str, what: str, lo: int, hi: int, pairs: bool) -> str | None:
    """What is wrong with a qos vlarb ('vl:weight,...') or sl2vl ('vl,...' x16) value, or None."""
    items = [t for t in text.split(",")]
    for t in items:
        parts = t.split(":") if pairs else [t]
        if len(parts) != (2 if pairs else 1):
            return f"{t!r} is not {what}"
        for part, (a, b) in zip(parts, ((lo, hi), (0, 255)) if pairs else ((lo, hi),)):
            v = _number(part.strip())
            if v is None or not a <= v <= b:
                return f"{part.strip()!r} in {t!r} is outside {a}..{b}"
    if pairs and len(items) > 64:
        return f"{len(items)} vl:weight pairs; at most 64"
    if not pairs and len(items) != 16:
        return f"{len(items)} VLs; one for each of the 16 SLs"
    return None


def check(key: str, value: str, where: str | None = None, path: str | None = None,
          line: int | None = None) -> str:
    """`value` if OpenSM 3.3.23 takes `key value` as written; else an InputError naming the option
    (`where`: how the user gave it, e.g. '--conf lmc=99'; `path`/`line`: a conf file's line)."""
    where = where or f"{key} {value}"
    spec = OPTIONS.get(key)

    def bad(msg: str):
        raise InputError(f"{where.replace(chr(0), '^@')}: {msg}", path=path, line=line)

    if spec is None:
        near = difflib.get_close_matches(key, OPTIONS, n=1)
        bad(f"OpenSM 3.3.23 has no option {key!r}" + (f" (did you mean {near[0]}?)" if near else
                                                     " (it would ignore the line)"))
    if value == "" and spec not in (TEXT, RAW):
        bad("no value")
    if "\0" in value:  # C would stop at it; Python's file functions refuse it
        bad(f"{value[:40]!r} holds a NUL byte")
    if value == "(null)" and not isinstance(spec, (tuple, set)) and spec != BOOL:
        return value  # OpenSM's "unset" for a string option (its default, as `opensm -c` writes it)
    if spec == BOOL:
        if value not in ("TRUE", "FALSE"):
            bad(f"{value!r} is not TRUE or FALSE (OpenSM reads anything but TRUE as FALSE)")
    elif spec == "engines":
        try:
            parse_engines(value, where)
        except InputError as e:  # inside a conf: its file and line too
            if path is None:
                raise
            raise InputError(str(e), path=path, line=line) from None
    elif spec in ("vlarb", "sl2vl"):
        why = _list_of(value, "vl:weight" if spec == "vlarb" else "a VL", 0, 14 if spec == "vlarb" else 15,
                       spec == "vlarb")
        if why:
            bad(why)
    elif isinstance(spec, tuple):
        v = _number(value)
        lo, hi = spec
        if v is None:
            bad(f"{value[:40]!r} is not a number")
        if not lo <= v <= hi:
            bad(f"{value[:40]} is outside {lo}..{hi:#x}" if hi > 0xFFFF else f"{value[:40]} is outside {lo}..{hi}")
    elif isinstance(spec, set):
        words = all(isinstance(x, str) for x in spec)
        v = value if words else _number(value)
        if v not in spec:
            known = ", ".join(sorted(spec)) if words else _ranges(spec)
            bad(f"{value[:40]!r} is not one of OpenSM's values ({known})")
    return value


def _ranges(values: set[int]) -> str:
    out, run = [], []
    for v in sorted(values):
        if run and v == run[-1] + 1:
            run.append(v)
            continue
        if run:
            out.append(f"{run[0]}..{run[-1]}" if len(run) > 1 else str(run[0]))
        run = [v]
    out.append(f"{run[0]}..{run[-1]}" if len(run) > 1 else str(run[0]))
    return ", ".join(out)


def parse_line(raw: str) -> tuple[str, str] | None:
    """(key, value) of an opensm.conf line as OpenSM reads it ('#' starts a comment), or None."""
    text = raw.split("#", 1)[0].strip()
    if not text:
        return None
    key, *rest = re.split(r"[ \t]", text, maxsplit=1)
    value = rest[0].strip() if rest else ""
    if len(value) > 1 and value[0] == value[-1] and value[0] in "'\"":  # clean_val drops one pair of quotes
        value = value[1:-1]
    return key, value


def read(text: str) -> dict[str, str]:
    """An opensm.conf's options as OpenSM takes them: its parser (osm_subn_parse_conf_file)
    sets a key anew at every line that names it, so a repeated key's last line wins (OpenSM
    3.3.23 logs each "Loading Cached Option" and dumps the last with `opensm -F conf -c out`).
    Keys in the order of the line each value came from."""
    out: dict[str, str] = {}
    for raw in text.splitlines():
        kv = parse_line(raw)
        if kv:
            out.pop(kv[0], None)
            out[kv[0]] = kv[1]
    return out


def check_text(text: str, path: str) -> None:
    """Every line of an opensm.conf (a plan's, a user's --opensm-config), with file:line."""
    for ln, raw in enumerate(text.splitlines(), 1):
        kv = parse_line(raw)
        if kv:
            check(kv[0], kv[1], f"{kv[0]} {kv[1][:60]}".rstrip(), path, ln)


def resolve_files(text: str, base: Path) -> str:
    """The conf with every relative path of a file option made absolute against `base` (the
    plan's directory): OpenSM opens them relative to its own cwd, and a plan must work wherever
    it is copied."""
    out = []
    for raw in text.splitlines(keepends=True):
        kv = parse_line(raw)
        if kv and kv[0] in FILE_KEYS and kv[1] not in ("", "(null)") and not Path(kv[1]).is_absolute():
            nl = "\n" if raw.endswith("\n") else ""
            raw = f"{kv[0]} {(base / kv[1]).resolve()}{nl}"
        out.append(raw)
    return "".join(out)
