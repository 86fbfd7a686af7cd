// SPDX-License-Identifier: MIT
/*
 * osm_hdor_engine.c -- a routing pass from start to end, the same for every
 * front end: which KNS hdor knows (hdor.conf, the remembered state, the last
 * complete pass, first sight), whether the fabric is that KNS degraded or a
 * complete KNS, the analysis before anything is written, the hop matrices,
 * the tables, the dump, the state, and the pass's summary line.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "osm_hdor.h"

void hdor_engine_init(hdor_engine_t *ctx, hdor_log_fn log, void *arg)
{
	memset(ctx, 0, sizeof(*ctx));
	ctx->log = log;
	ctx->log_arg = arg;
	ctx->opts.qos = 1;
}

/* everything the engine holds (OpenSM's destroy and the plugin's delete may
 * both run) */
void hdor_engine_release(hdor_engine_t *ctx)
{
	hdor_pass_free(ctx->pass);
	ctx->pass = NULL;
	hdor_deg_free(ctx->deg);
	ctx->deg = NULL;
	hdor_kns_free(ctx->kns);
	ctx->kns = NULL;
	hdor_qos_free(ctx->qos);
	ctx->qos = NULL;
	hdor_qos_free(ctx->qos_old);
	ctx->qos_old = NULL;
	hdor_written_free(&ctx->written);
	free(ctx->bidx);
	ctx->bidx = NULL;
	ctx->nbidx = 0;
}

void hdor_tables_forget(hdor_engine_t *ctx)
{
	ctx->written.serial = 0;
}

/* ------------------------------------------------------------------------ */
/* The KNS hdor knows: read at start, adopted, remembered on disk           */

/* at the first pass: the KNS of hdor.conf, else the remembered one */
static void kns_load(hdor_engine_t *ctx)
{
	hdor_kns_t *K = NULL;
	int rc;

	ctx->loaded = 1;
	if (ctx->opts.conf_path[0]) {
		rc = hdor_kns_read(ctx, ctx->opts.conf_path, K_CONF, &K);
		if (rc == 1 && ctx->opts.conf_named)
			rc = hdor_declinec(ctx, HD_CONF_READ,
					   "cannot read %s: %s",
					   ctx->opts.conf_path,
					   strerror(ENOENT));
		if (rc < 0 && ctx->code == HD_NOMEM) {
			ctx->loaded = 0; /* try again at the next pass */
			return;
		}
		if (rc < 0) {
			hdor_log_error(
				ctx, ctx->code,
				"%s; hdor declines until it is fixed or removed (and OpenSM restarted)",
				ctx->reason);
			snprintf(ctx->conf_bad, sizeof(ctx->conf_bad), "%s",
				 ctx->reason);
			ctx->conf_bad_code = ctx->code;
			return;
		}
		if (rc == 0) {
			ctx->kns = K;
			/*
			 * remembered too (a restart without hdor.conf knows it)
			 */
			ctx->kns_dirty = 1;
			hdor_log(
				ctx, HDOR_LOG_INFO,
				"hdor: the KNS is described by %s: k=%u n=%u, %u devices",
				ctx->opts.conf_path, K->k, K->n, K->nn);
			return;
		}
	}
	if (!ctx->opts.state_path[0])
		return;
	rc = hdor_kns_read(ctx, ctx->opts.state_path, K_STATE, &K);
	if (rc < 0) {
		if (ctx->code == HD_NOMEM)
			ctx->loaded = 0;
		else
			hdor_log_error(ctx, HD_STATE_BAD,
				       "the remembered state is ignored: %s",
				       ctx->reason);
		return;
	}
	if (rc == 0) {
		ctx->kns = K;
		hdor_log(
			ctx, HDOR_LOG_INFO,
			"hdor: remembered KNS read from %s: k=%u n=%u, %u devices",
			ctx->opts.state_path, K->k, K->n, K->nn);
	}
}

/* two KNS with the same devices, cables, LIDs and coordinates (the file would
 * not change) */
static int kns_same(const hdor_kns_t *A, const hdor_kns_t *B)
{
	uint32_t ns;

	if (!A || !B || A->nn != B->nn || A->k != B->k || A->n != B->n ||
	    A->s != B->s)
		return 0;
	ns = A->poff[A->nn];
	return ns == B->poff[B->nn] &&
	       !memcmp(A->guid, B->guid, A->nn * sizeof(uint64_t)) &&
	       !memcmp(A->ident, B->ident, A->nn * sizeof(uint64_t)) &&
	       !memcmp(A->np, B->np, A->nn) &&
	       !memcmp(A->peer, B->peer, ns * sizeof(int)) &&
	       !memcmp(A->pport, B->pport, ns) &&
	       !memcmp(A->plid, B->plid, ns * sizeof(uint16_t)) &&
	       !memcmp(A->plmc, B->plmc, ns) &&
	       !memcmp(A->coord, B->coord, (size_t)A->nn * A->n) &&
	       !memcmp(A->dim, B->dim, A->nn * sizeof(int));
}

/* the KNS hdor now knows is K (the old one is freed); remembered on disk
 * after the pass */
static void kns_adopt(hdor_engine_t *ctx, hdor_kns_t *K)
{
	if (ctx->kns == K)
		return;
	if (!kns_same(ctx->kns, K))
		ctx->kns_dirty = 1;
	hdor_kns_free(ctx->kns);
	ctx->kns = K;
}

/* after a pass that configured tables: write the remembered state when the
 * KNS changed, and hdor.conf when a device of it was replaced */
static void kns_persist(hdor_engine_t *ctx)
{
	const char *conf = ctx->opts.conf_path, *state = ctx->opts.state_path;

	if (ctx->conf_dirty && ctx->kns && conf[0]) {
		ctx->conf_dirty = 0;
		if (hdor_kns_write(
			    ctx->kns, conf,
			    "the KNS for the hdor routing engine, updated by hdor after a replacement (was= names the device a new one replaced)"))
			hdor_log_error(
				ctx, HD_STATE_IO,
				"cannot update %s: %s (hdor finds the replacement again at the next start)",
				conf, strerror(errno));
		else
			hdor_log(ctx, HDOR_LOG_INFO,
				 "hdor: %s updated (a replaced device)", conf);
	}
	if (!ctx->kns_dirty || !ctx->kns || !state[0])
		return;
	ctx->kns_dirty = 0;
	if (hdor_kns_write(
		    ctx->kns, state,
		    "the KNS the hdor routing engine remembers (hdor reads it at start when there is no hdor.conf; delete it to forget)"))
		hdor_log_error(
			ctx, HD_STATE_IO,
			"cannot write %s: %s (a restart will not know this KNS)",
			state, strerror(errno));
}

/* ------------------------------------------------------------------------ */
/* Which pass: degraded against the KNS hdor knows, complete, first sight   */

/*
 * the fabric against the KNS hdor knows (ctx->kns; its tables built first
 * when it came from a file, again when the LIDs moved): 1 routed by the
 * degraded pass (ctx->deg ready; also a complete fabric of a KNS from
 * elsewhere or with a replaced device: nothing failed), 0 route it as a
 * complete KNS (none known, or the one of the last complete pass complete
 * again), -1 not that KNS (ctx->reason), -2 that KNS but declined
 */
static int degraded_pass(hdor_engine_t *ctx)
{
	hdor_deg_t *D = NULL;
	int m = 2, tries;

	if (!ctx->kns)
		return 0;
	for (tries = 0; tries < 2 && m == 2; tries++) {
		hdor_deg_free(D);
		D = NULL;
		if (!ctx->kns->lft || tries) {
			size_t len = strlen(ctx->note);
			hdor_kns_t *K;

			if (!ctx->kns->lft && hdor_kns_place(ctx))
				return -2;
			K = hdor_kns_build(ctx, ctx->kns, 0);
			if (!K)
				return ctx->code == HD_NOMEM ? -2 : -1;
			kns_adopt(ctx, K);
			if (tries)
				snprintf(
					ctx->note + len,
					sizeof(ctx->note) - len,
					": the fault-free tables recomputed for the LIDs of now");
		}
		D = hdor_calloc(1, sizeof(*D));
		if (!D)
			return hdor_decline(ctx, "out of memory"), -2;
		D->K = ctx->kns;
		m = hdor_deg_match(ctx, D);
	}
	if (m == 2)
		m = hdor_declinec(ctx, HD_LIDS_MOVE,
				  "the LIDs keep moving (%s)", ctx->note);
	if (m == 0 && ctx->kns->origin == K_PASS && !ctx->kns->replaced) {
		hdor_deg_free(D);
		return 0;
	}
	if (m < 0) {
		hdor_deg_free(D);
		return ctx->code == HD_NOMEM ? -2 : -1;
	}
	hdor_ph_mark(ctx, PH_KNS);
	if (hdor_deg_route(ctx, D)) {
		hdor_deg_free(D);
		return -2;
	}
	ctx->deg = D;
	return 1;
}

/* one INFO line: hdor declines this pass and why (an error line for out of
 * memory) */
static void log_decline(hdor_engine_t *ctx)
{
	/* an error line all the same: "ERR HD01: hdor: declined (HD01): ..." */
	if (ctx->code == HD_NOMEM)
		hdor_log_error(
			ctx, HD_NOMEM,
			"declined (HD01): out of memory; OpenSM falls back to the next routing engine");
	else
		hdor_log(
			ctx, HDOR_LOG_INFO,
			"hdor: declined (HD%02X): %s; OpenSM falls back to the next routing engine",
			ctx->code ? ctx->code : HD_NOT_KNS, ctx->reason);
}

/* no KNS known fits: identify the fabric at first sight and route it against
 * that KNS: 1, or -1 (ctx->reason: why not) */
static int sight_pass(hdor_engine_t *ctx)
{
	hdor_pass_t *P = hdor_calloc(1, sizeof(*P));
	hdor_kns_t *Kfs = NULL, *K = NULL, *old;
	unsigned nr, ns, nl;
	int rc;

	if (!P)
		return hdor_decline(ctx, "out of memory");
	P->fab = ctx->fab;
	if (!hdor_collect(ctx, P) && !hdor_structure(ctx, P))
		Kfs = hdor_first_sight(ctx, P, &nr, &ns, &nl);
	hdor_pass_free(P);
	if (!Kfs)
		return -1;
	K = hdor_kns_build(ctx, Kfs, 1);
	hdor_kns_free(Kfs);
	if (!K) {
		if (ctx->code != HD_NOMEM)
			ctx->code = HD_FIRST_SIGHT;
		return -1;
	}
	hdor_phantom_descs(K);
	old = ctx->kns;
	ctx->kns = K;
	rc = degraded_pass(ctx);
	if (rc != 1) {
		ctx->kns = old; /* keep what was known */
		hdor_kns_free(K);
		return -1;
	}
	hdor_kns_free(old);
	ctx->kns_dirty = 1;
	snprintf(
		ctx->note, sizeof(ctx->note),
		"identified at first sight: %u router(s), %u indirect switch(es), %u router cable(s) missing",
		nr, ns, nl);
	return 1;
}

/* a new pass: nothing of an earlier one is reused */
static void pass_start(hdor_engine_t *ctx, const struct hdor_fabric *fab,
		       struct timespec *t0)
{
	hdor_pass_free(ctx->pass);
	ctx->pass = NULL;
	hdor_deg_free(ctx->deg);
	ctx->deg = NULL;
	ctx->fab = fab;
	ctx->passes++;
	ctx->reason[0] = '\0';
	ctx->note[0] = '\0';
	ctx->code = 0;
	ctx->last_kind = HDOR_PASS_NONE;
	clock_gettime(CLOCK_MONOTONIC, t0);
	hdor_ph_start(ctx, t0);
}

/* a degraded pass's note: where its KNS comes from */
static void degraded_note(hdor_engine_t *ctx)
{
	if (ctx->note[0])
		return;
	if (ctx->kns->origin == K_SIGHT)
		snprintf(ctx->note, sizeof(ctx->note),
			 "the KNS identified at first sight");
	else if (ctx->kns->origin != K_PASS)
		snprintf(ctx->note, sizeof(ctx->note), "the KNS of %.400s",
			 ctx->kns->origin == K_CONF ? ctx->opts.conf_path :
						      ctx->opts.state_path);
}

/*
 * the code of a fabric that is neither a complete KNS (why: code2) nor one
 * first sight identifies (code): a device hdor does not route or a size beyond
 * its own, else first sight's doubt, else not a KNS
 */
static int decline_class(int code2, int code)
{
	if (code2 == HD_DEVICE || code2 == HD_SIZE)
		return code2;
	if (code == HD_FIRST_SIGHT || code == HD_SIZE)
		return code;
	return HD_NOT_KNS;
}

/* not the KNS hdor knows (why), not a complete KNS (ctx->reason): first
 * sight, else the decline naming every reason */
static int not_complete(hdor_engine_t *ctx, int rc, const char *why,
			const struct timespec *t0)
{
	char why2[sizeof(ctx->reason)], sight[sizeof(ctx->reason)];
	int code, code2 = ctx->code;

	if (ctx->code == HD_NOMEM) {
		log_decline(ctx);
		return -1;
	}
	snprintf(why2, sizeof(why2), "%s", ctx->reason);
	if (sight_pass(ctx) == 1) {
		ctx->deg_t0 = *t0;
		return 1;
	}
	if (ctx->code != HD_NOMEM) {
		code = decline_class(code2, ctx->code);
		snprintf(sight, sizeof(sight), "%s", ctx->reason);
		if (rc < 0)
			hdor_declinec(
				ctx, code,
				"not the remembered KNS (%s); not a complete KNS (%s); not identified at first sight (%s)",
				why, why2, sight);
		else
			hdor_declinec(ctx, code,
				      "%s; not identified at first sight (%s)",
				      why2, sight);
	}
	log_decline(ctx);
	return -1;
}

/* decide and analyse this pass: 1 degraded (ctx->deg), 0 complete (ctx->pass
 * ready), -1 declined (logged; OpenSM tries the next engine) */
int hdor_prepare(hdor_engine_t *ctx, const struct hdor_fabric *fab)
{
	char why[sizeof(ctx->reason)];
	hdor_pass_t *P;
	struct timespec t0;
	int rc, origin;

	pass_start(ctx, fab, &t0);
	if (ctx->opts.use_ucast_cache && ctx->passes == 1)
		hdor_log_error(
			ctx, HD_UCAST_CACHE,
			"use_ucast_cache (-A) is on: after a failure OpenSM may reuse cached tables without calling hdor (no detours, no path SLs); turn it off");
	if (!ctx->loaded)
		kns_load(ctx);
	if (ctx->conf_bad[0]) {
		hdor_declinec(ctx, ctx->conf_bad_code, "%s is not usable: %s",
			      ctx->opts.conf_path, ctx->conf_bad);
		log_decline(ctx);
		return -1;
	}
	origin = ctx->kns ? ctx->kns->origin : K_PASS;
	rc = degraded_pass(ctx);
	if (rc == 1) {
		ctx->deg_t0 = t0;
		degraded_note(ctx);
		return 1;
	}
	if (rc == -2 || (rc == -1 && origin == K_CONF)) {
		if (rc == -1 && origin == K_CONF && ctx->code != HD_NOMEM) {
			snprintf(why, sizeof(why), "%s", ctx->reason);
			if (ctx->code == HD_CONF_INVALID)
				hdor_declinec(ctx, HD_CONF_INVALID,
					      "%s does not describe a KNS: %s",
					      ctx->opts.conf_path, why);
			else
				hdor_declinec(
					ctx, HD_CONF_MISMATCH,
					"the fabric is not the KNS of %s: %s",
					ctx->opts.conf_path, why);
		}
		log_decline(ctx);
		return -1;
	}
	snprintf(why, sizeof(why), "%s", rc < 0 ? ctx->reason : "");
	P = hdor_calloc(1, sizeof(*P));
	if (!P) {
		hdor_decline(ctx, "out of memory");
		log_decline(ctx);
		return -1;
	}
	P->fab = fab;
	P->t0 = t0;
	hdor_ph_mark(ctx, PH_KNS);
	if (hdor_analyse(ctx, P)) {
		hdor_pass_free(P);
		return not_complete(ctx, rc, why, &t0);
	}
	ctx->pass = P;
	return 0;
}

/* ------------------------------------------------------------------------ */
/* The hop matrices, the tables, the summary line                           */

/* OpenSM's hop matrices as `want` says (HOPS_*); 0: done (or none wanted),
 * 1: OpenSM builds them */
int hdor_hop_matrices(hdor_engine_t *ctx, int want,
		      const struct hdor_hop_sink *sink)
{
	hdor_pass_t *P = ctx->pass;
	int hr, closed;

	if (ctx->deg) {
		/* degraded: over the working links (OpenSM's own when that
		 * fails) */
		hr = want == HOPS_OWN ? hdor_deg_fill_hops(ctx->deg, sink) : 1;
		hdor_ph_mark(ctx, PH_HOPS);
		if (want == HOPS_NONE || hr == 0) {
			ctx->deg->own_hops = want;
			return 0;
		}
		return 1;
	}
	if (want == HOPS_NONE) {
		hdor_ph_mark(ctx, PH_HOPS);
		P->own_hops = HOPS_NONE;
		return 0;
	}
	if (want != HOPS_OWN)
		return 1; /* OpenSM builds its min-hop matrices */
	closed = hdor_closed_form_ok(P);
	hr = closed ? hdor_fill_hops(P, sink) : hdor_fill_hops_bfs(P, sink);
	hdor_ph_mark(ctx, PH_HOPS);
	if (hr == 0) {
		P->own_hops = HOPS_OWN;
		hdor_log(ctx, HDOR_LOG_VERBOSE,
			 "hdor: hop matrices of %d switches filled %s", P->nsw,
			 closed ? "from coordinates" :
				  "by breadth-first search");
		return 0;
	}
	hdor_log(ctx, HDOR_LOG_INFO,
		 "hdor: hop matrices left to OpenSM (%d switches)", P->nsw);
	/* rows written so far hold exact minimal counts; OpenSM's relaxation
	 * only lowers */
	return 1;
}

/* the hop matrices' part of a summary line: whose they are */
static const char *hops_whose(int own_hops)
{
	return own_hops == HOPS_OWN  ? "own " :
	       own_hops == HOPS_NONE ? "no " :
				       "OpenSM's ";
}

static void degraded_summary(hdor_engine_t *ctx, const hdor_deg_t *D,
			     int failed)
{
	char what[700], ana[400], rest[400];

	hdor_ph_text(ctx, ana, sizeof(ana), PH_KNS, PH_SLVL, "");
	hdor_ph_text(ctx, rest, sizeof(rest), PH_HOPS, PH_STATE,
		     hops_whose(D->own_hops));
	if (failed)
		snprintf(
			what, sizeof(what),
			"degraded KNS: %u failed link(s), %u failed node(s); %u VL(s) used of %u the ports offer, SLs 0-%u; %u pair(s) detoured, extra links max %u mean %.3f%s%s",
			D->dead_links, D->dead_nodes, D->vls, D->vlcap,
			ctx->qos ? ctx->qos->maxsl : 0, D->detoured,
			D->extra_max, D->extra_mean, ctx->note[0] ? "; " : "",
			ctx->note);
	else
		snprintf(what, sizeof(what), "complete KNS%s%s",
			 ctx->note[0] ? ", " : "", ctx->note);
	hdor_log(ctx, HDOR_LOG_INFO,
		 "hdor: routed k=%u n=%u s=%u: %u switches, %u LIDs, %" PRIu64
		 " us (pass %lu; %s; analysis and routing %" PRIu64
		 " us: %s; %s; peak allocation %.1f MiB)",
		 D->K->k, D->K->n, D->K->s, D->nrouters + D->nswitches,
		 D->nowned, hdor_usec_since(&ctx->deg_t0), ctx->passes, what,
		 hdor_ph_sum(ctx, PH_KNS, PH_SLVL), ana, rest,
		 (double)(ctx->mem_peak - ctx->mem0) / 1048576.0);
}

static int degraded_tables(hdor_engine_t *ctx)
{
	hdor_deg_t *D = ctx->deg;
	int failed = D->dead_links || D->dead_nodes;

	ctx->deg = NULL;
	hdor_ph_lap(ctx, PH_OSM);
	if (ctx->opts.tables_kept)
		hdor_deg_write_kept(ctx, D);
	else
		hdor_deg_write_tables(D);
	hdor_ph_mark(ctx, PH_LFT);
	hdor_qos_publish(ctx, failed ? D->qos : NULL);
	if (failed)
		D->qos = NULL;
	hdor_ph_lap(ctx, PH_SLVL);
	if (ctx->opts.dump_path[0] && hdor_write_dump_degraded(ctx, D))
		hdor_log_error(ctx, HD_DUMP_IO, "cannot write %s: %s",
			       ctx->opts.dump_path, strerror(errno));
	hdor_ph_mark(ctx, PH_DUMP);
	kns_persist(ctx);
	hdor_ph_mark(ctx, PH_STATE);
	degraded_summary(ctx, D, failed);
	ctx->last_kind = HDOR_PASS_DEGRADED;
	ctx->last_k = D->K->k;
	ctx->last_n = D->K->n;
	ctx->last_s = D->K->s;
	ctx->last_switches = D->nrouters + D->nswitches;
	ctx->last_lids = D->nowned;
	ctx->last_vls = D->vls;
	ctx->last_vlcap = D->vlcap;
	ctx->last_maxsl = ctx->qos ? ctx->qos->maxsl : 0;
	ctx->last_dead_links = D->dead_links;
	ctx->last_dead_nodes = D->dead_nodes;
	ctx->last_detoured = D->detoured;
	ctx->last_extra_max = D->extra_max;
	ctx->last_extra_mean = D->extra_mean;
	hdor_deg_free(D);
	return 0;
}

static void complete_summary(hdor_engine_t *ctx, const hdor_pass_t *P)
{
	char ana[400], rest[400];

	hdor_ph_text(ctx, ana, sizeof(ana), PH_KNS, PH_SETS, "");
	hdor_ph_text(ctx, rest, sizeof(rest), PH_HOPS, PH_STATE,
		     hops_whose(P->own_hops));
	hdor_log(ctx, HDOR_LOG_INFO,
		 "hdor: routed k=%u n=%u s=%u: %d switches, %u LIDs, %" PRIu64
		 " us (pass %lu; analysis %" PRIu64
		 " us: %s; %s; peak allocation %.1f MiB)",
		 P->k, P->n, P->s, P->nsw, P->nlids, hdor_usec_since(&P->t0),
		 ctx->passes, hdor_ph_sum(ctx, PH_KNS, PH_SETS), ana, rest,
		 (double)(ctx->mem_peak - ctx->mem0) / 1048576.0);
}

/* the prepared pass's tables into the model's switches, its dump, the KNS
 * remembered; 0 */
int hdor_tables(hdor_engine_t *ctx)
{
	hdor_pass_t *P;
	hdor_kns_t *K;

	if (ctx->deg)
		return degraded_tables(ctx);
	P = ctx->pass;
	ctx->pass = NULL;
	hdor_ph_lap(ctx, PH_OSM);
	if (ctx->opts.tables_kept) {
		/* (what they hold is not K's: it is made from them below) */
		hdor_prepare_tables(ctx->fab);
		hdor_tables_forget(ctx);
	}
	hdor_route_all(P);
	hdor_ph_mark(ctx, PH_LFT);
	if (ctx->opts.dump_path[0] && hdor_write_dump(ctx, P))
		hdor_log_error(ctx, HD_DUMP_IO, "cannot write %s: %s",
			       ctx->opts.dump_path, strerror(errno));
	hdor_ph_mark(ctx, PH_DUMP);
	/* remember this complete KNS for the passes after a failure (docs
	 * section 6) */
	K = hdor_kns_remember(ctx, P, NULL);
	if (!K) {
		hdor_log_error(
			ctx, HD_NOMEM,
			"out of memory: the KNS is not remembered; a later failure will be declined");
		hdor_kns_free(ctx->kns);
		ctx->kns = NULL;
	} else {
		kns_adopt(ctx, K);
	}
	hdor_qos_publish(ctx, NULL);
	kns_persist(ctx);
	hdor_ph_mark(ctx, PH_STATE);
	complete_summary(ctx, P);
	ctx->last_kind = HDOR_PASS_COMPLETE;
	ctx->last_k = P->k;
	ctx->last_n = P->n;
	ctx->last_s = P->s;
	ctx->last_switches = (uint32_t)P->nsw;
	ctx->last_lids = P->nlids;
	ctx->last_vls = 1;
	ctx->last_vlcap = ctx->last_maxsl = 0;
	ctx->last_dead_links = ctx->last_dead_nodes = 0;
	ctx->last_detoured = ctx->last_extra_max = 0;
	ctx->last_extra_mean = 0.0;
	hdor_pass_free(P);
	return 0;
}
