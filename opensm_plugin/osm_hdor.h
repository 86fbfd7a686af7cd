/* SPDX-License-Identifier: MIT */
/*
 * osm_hdor.h -- the internal header of the Hybrid-DOR ("hdor") routing engine
 * for KNS (k-ary n-direct s-indirect) InfiniBand fabrics.
 *
 * The engine is a core that knows no OpenSM type, and front ends that feed it:
 *
 *   - the core (osm_hdor_*.c) works on its own small fabric model (struct
 *     hdor_fabric below: nodes, ports, links, LIDs) and keeps what it knows of
 *     the KNS in struct hdor_engine across passes;
 *   - the OpenSM adapter (osm_ucast_hdor.c) fills the model from osm_subn_t,
 *     writes the tables, SL2VL rows and path SLs back and registers the engine
 *     (a plugin of Debian's stock OpenSM, or built in);
 *   - the offline front end (hdor_offline.c, libhdorcore.so) runs the same
 *     core on a discovered fabric without OpenSM.
 *
 * The algorithm, with every tie-break, is docs/hdor.md of ibtool; the map of
 * the units (what each owns, who calls whom) is in docs/plugin.md.
 */
#ifndef OSM_HDOR_H
#define OSM_HDOR_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <time.h>

#define HDOR_NAME "hdor"
#define HDOR_DUMP_FILE "opensm-hdor.dump"
#define HDOR_CONF_NAME "hdor.conf"
#define HDOR_STATE_NAME "hdor-kns.conf"
#define HDOR_MAX_N 16
#define HDOR_NO_PATH 0xff
#define HDOR_INF (1 << 30)
#define HDOR_MAX_SLS 16
#define HDOR_MAX_HOPS 64
/* GUIDs of devices never seen (first sight) */
#define HDOR_PHANTOM 0xffffffff00000000ULL

/* ------------------------------------------------------------------------ */
/* The fabric model the front ends fill                                     */

enum { HDOR_NODE_SWITCH = 1, HDOR_NODE_CA = 2 };

/* port flags: a cable is there (healthy or not), and it works */
#define HDOR_PORT_LINKED 0x01
#define HDOR_PORT_HEALTHY 0x02
/* node flags: a switch without its switch object (OpenSM), a node masked out
 * by a failure set (hdor_fabric_mask) */
#define HDOR_NODE_NO_SWITCH 0x01
#define HDOR_NODE_ABSENT 0x02

struct hdor_node;

struct hdor_port {
	struct hdor_node *peer; /* the node at the other end, NULL: none */
	uint8_t peer_port;
	uint8_t flags; /* HDOR_PORT_* */
	/* PortInfo VLCap: 1..5 = VL0, VL0-1, -3, -7, -14 */
	uint8_t vl_cap;
};

struct hdor_node {
	uint64_t guid;
	const char *desc;
	/* HDOR_NODE_SWITCH, HDOR_NODE_CA, else neither */
	uint8_t type;
	uint8_t np; /* ports 0..np-1 (port 0 included) */
	uint8_t flags; /* HDOR_NODE_* */
	uint16_t base_lid; /* a switch's LID (port 0) */
	/* a switch: the highest LID its table may hold */
	uint32_t top;
	uint8_t *lft; /* a switch: its new table, top + 1 entries */
	/* a switch: the LIDs routed through each port */
	uint32_t *paths;
	struct hdor_port *ports; /* np entries */
	void *priv; /* the front end's object */
};

/* a port that owns LIDs (an HCA port, a switch's port 0) */
struct hdor_lport {
	struct hdor_node *node;
	uint8_t port;
	uint16_t lid; /* base LID, 0: none */
	uint8_t lmc;
	uint64_t guid; /* its port GUID */
};

/*
 * Nodes in the front end's order (OpenSM: its node table's), the LID-owning
 * ports in its port table's; by_guid: node indices by GUID (hdor_fabric_index)
 */
struct hdor_fabric {
	uint32_t nn, nlp;
	struct hdor_node *nodes;
	struct hdor_lport *lports;
	uint32_t *by_guid;
};

static inline int hdor_node_here(const struct hdor_node *x)
{
	return x && !(x->flags & HDOR_NODE_ABSENT);
}

/* the node at the other end of x's port p when the cable works, else NULL */
static inline struct hdor_node *hdor_link(const struct hdor_node *x, unsigned p)
{
	const struct hdor_port *ph;

	if (p >= x->np)
		return NULL;
	ph = &x->ports[p];
	if (!(ph->flags & HDOR_PORT_LINKED) ||
	    !(ph->flags & HDOR_PORT_HEALTHY) || !hdor_node_here(ph->peer))
		return NULL;
	return ph->peer;
}

/* the node at the other end of x's port p when a cable is there (healthy or
 * not), else NULL */
static inline struct hdor_node *hdor_cable(const struct hdor_node *x,
					   unsigned p)
{
	if (!x || p >= x->np || !(x->ports[p].flags & HDOR_PORT_LINKED) ||
	    !hdor_node_here(x->ports[p].peer))
		return NULL;
	return x->ports[p].peer;
}

int hdor_fabric_index(struct hdor_fabric *fab);
struct hdor_node *hdor_fabric_find(const struct hdor_fabric *fab,
				   uint64_t guid);
struct hdor_node *hdor_fabric_node(const struct hdor_fabric *fab,
				   uint64_t guid);

/* ------------------------------------------------------------------------ */
/* Messages: errors are logged "ERR HDxx: ...", a decline as one INFO line   */
/* "hdor: declined (HDxx): <reason>; ..." (docs/plugin.md "Log lines")       */

enum { HDOR_LOG_ERROR = 1, HDOR_LOG_INFO = 2, HDOR_LOG_VERBOSE = 4 };

enum {
	HD_NOMEM = 0x01, /* out of memory (error) */
	HD_DUMP_IO = 0x02, /* cannot write opensm-hdor.dump (error) */
	/* cannot write the state or hdor.conf (error) */
	HD_STATE_IO = 0x03,
	HD_CONF_READ = 0x04, /* cannot read hdor.conf (error) */
	HD_CONF_SYNTAX = 0x05, /* hdor.conf is not in the format (error) */
	HD_STATE_BAD = 0x06, /* the state is unreadable: ignored (error) */
	HD_LAYOUT = 0x07, /* built for another OpenSM layout (error) */
	HD_REGISTER = 0x08, /* cannot register the engine (error) */
	HD_UCAST_CACHE = 0x09, /* use_ucast_cache is on (error) */
	HD_NOT_KNS = 0x10, /* not a KNS (docs sections 1-3) */
	HD_FIRST_SIGHT = 0x11, /* degraded, not identified at first sight */
	HD_SIZE = 0x12, /* beyond hdor's sizes (k, n, points, ports) */
	HD_DEVICE = 0x13, /* a device hdor does not route */
	HD_LIDS_MOVE = 0x14, /* the LIDs keep moving within a pass */
	/* the fabric is not the KNS of hdor.conf */
	HD_CONF_MISMATCH = 0x20,
	HD_CONF_INVALID = 0x21, /* hdor.conf does not describe a KNS */
	HD_SCHEME = 0x30, /* a detour the scheme does not allow */
	HD_VLS = 0x31, /* more VLs than the ports offer */
	HD_SLS = 0x32, /* more than 16 SLs */
	HD_VLS_QOS = 0x33, /* VLs needed, qos off */
	HD_MCAST = 0x40, /* a multicast member left out (error) */
};

/* ------------------------------------------------------------------------ */
/* Per-pass data of a complete KNS (docs sections 1-5)                      */

enum { N_SWITCH = HDOR_NODE_SWITCH, N_CA = HDOR_NODE_CA };
enum { T_NONE = 0, T_ROUTER = 1, T_SWITCH = 2 };

typedef struct {
	uint64_t m[4];
} pmask_t; /* a set of ports 0..255 */

typedef struct {
	uint8_t port; /* local port */
	uint8_t kind; /* N_SWITCH / N_CA */
	uint8_t rport; /* remote port */
	int idx; /* remote switch index or CA node index */
} hlink_t;

typedef struct {
	/* NULL: not there (a KNS from a file) */
	const struct hdor_node *node;
	uint8_t *lft; /* the table this pass writes */
	uint32_t *paths; /* its LIDs per port */
	uint32_t top; /* its highest LID */
	uint8_t np;
	uint64_t guid;
	int router; /* router index, -1 for an indirect switch */
	int group; /* group index of an indirect switch, -1 */
	int lidx; /* index inside its group */
	uint16_t base_lid;
	uint32_t loff, ln; /* healthy links */
	int first_set; /* chain of this switch's candidate sets */
} hsw_t;

typedef struct {
	const struct hdor_node *node;
	uint64_t guid;
	int router; /* router of its lowest linked port */
	int port_num;
} hca_t;

typedef struct {
	int sw;
	uint64_t guid;
	uint32_t goff, gn; /* distinct groups (CSR into rgl) */
} hrtr_t;

typedef struct {
	uint64_t key;
	int dim;
	uint32_t soff, sn; /* switches (CSR into gsw) */
	uint32_t moff, mn; /* members sorted by GUID (CSR into gmem) */
	/* k: member router index by coordinate in dim */
	int *mbyc;
	uint16_t *mdist; /* k * sn: hops from switch j to member m */
	/* sn * sn: switch-to-switch hops in the group */
	uint16_t *sdist;
} hgrp_t;

typedef struct {
	pmask_t mask;
	uint32_t poff; /* ports in pool */
	uint16_t np;
	uint32_t cnt; /* spreading counter */
	int next; /* next set of the same switch */
} hset_t;

typedef struct {
	uint8_t kind; /* T_* */
	uint8_t port; /* T_ROUTER: egress port at the target router */
	/* T_ROUTER: router index; T_SWITCH: switch index */
	int idx;
} ltgt_t;

typedef struct hdor_pass {
	const struct hdor_fabric *fab;
	/* nodes */
	int nsw, nca, nr, ng;
	hsw_t *sw;
	hca_t *ca;
	hlink_t *links;
	uint32_t nlinks;
	hrtr_t *rt;
	uint32_t *rgl; /* router -> groups */
	hgrp_t *grp;
	int *gsw, *gmem;
	/* model node -> switch index * 2 or CA * 2 + 1 */
	int *nval;
	/* KNS parameters */
	unsigned k, n, s;
	int r0;
	int *rg; /* nr * n: group by dimension */
	uint8_t *coord; /* nr * n */
	/* ng * n (the group's own dimension entry is 0) */
	uint8_t *gcoord;
	/* routing */
	int *rset; /* nr * n * k */
	int *sset; /* nsw * k (indirect switches only) */
	hset_t *sets;
	uint32_t nsets, capsets;
	uint8_t *pool;
	uint32_t npool, cappool;
	ltgt_t *lt;
	uint32_t max_lid, nlids;
	int ready; /* analysis done, tables may be written */
	int own_hops; /* HOPS_*: who filled the hop matrices */
	uint8_t *scratch; /* tables of a KNS from elsewhere (kns_build) */
	uint32_t *scratch_paths;
	struct timespec t0;
} hdor_pass_t;

/* whose hop matrices a pass leaves in OpenSM's switches */
enum { HOPS_OPENSM, HOPS_OWN, HOPS_NONE };

/* ------------------------------------------------------------------------ */
/* The KNS hdor knows, and a degraded pass (docs sections 6-7)              */

enum { R_ROUTER = 1, R_SWITCH = 2, R_HCA = 3 };
/* where a KNS comes from: a complete pass, hdor.conf, the state, first sight */
enum { K_PASS = 0, K_CONF = 1, K_STATE = 2, K_SIGHT = 3 };

/*
 * The complete KNS hdor knows, kept across sweeps: the last complete KNS it
 * routed, or the one of hdor.conf, of the remembered state, or identified at
 * first sight.  Nodes ("base nodes") are indexed by GUID order; nothing points
 * into a front end's objects.  A node's GUID orders it (the rules that break
 * ties by GUID); `ident` is the GUID of the device at its place now: the
 * same, unless a new device replaced it.  A node with a GUID of HDOR_PHANTOM
 * or above was never seen (first sight).
 */
typedef struct hdor_kns {
	uint32_t nn;
	uint64_t *guid;
	uint64_t *ident; /* the GUID of the device there now */
	uint32_t *isort; /* nodes by ident, ascending */
	uint8_t *type, *role, *np; /* N_*, R_*, ports 0..np-1 */
	char **desc;
	uint32_t *poff; /* (node, port) slot: poff[node] + port */
	int *peer; /* base node behind the slot, -1 */
	uint8_t *pport;
	uint16_t *plid; /* the base LID of each slot when last seen */
	uint8_t *plmc;
	/* indirect switches: dimension, group; else -1 */
	int *dim, *grp;
	uint32_t *lev; /* indirect switches: in-group level */
	uint8_t *coord; /* nn * n: routers, HCAs: router coordinates;
				 * switches: their group's */
	unsigned k, n, s;
	int ng;
	int *gdim;
	uint32_t *gsoff; /* group -> its switches (CSR into gsw) */
	int *gsw;
	int nrow;
	int *row; /* switch -> row of lft, -1 */
	uint32_t nlid; /* LIDs 0..nlid-1 */
	int *lnode; /* LID -> base node, -1 */
	uint8_t *lport;
	uint8_t *lft; /* nlid * nrow: the fault-free tables, by LID;
				 * NULL when read from a file */
	int origin; /* K_* : where it comes from */
	int replaced; /* some node's ident is not its GUID */
	uint64_t serial; /* this KNS among those the process knew (1, 2, ...) */
	struct hdor_kept *kept; /* what its degraded passes keep, NULL */
} hdor_kns_t;

#define KLFT(K, r, lid) ((K)->lft[(size_t)(lid) * (K)->nrow + (r)])

/* per LID of the fault-free tables: some switch has no route, some has one */
#define KR_HOLE 0x01
#define KR_ROUTE 0x02

/* path SLs and SL2VL rows of a degraded pass, read by the SA hooks */
typedef struct hdor_qos {
	uint32_t npath;
	/* dlid << 16 | slid, ascending (SL 0 unlisted) */
	uint64_t *pkey;
	uint32_t nl;
	uint16_t *base; /* LID -> the base LID of its port */
	uint8_t *psl;
	uint32_t nrow;
	uint64_t *rkey; /* in << 8 | out of each row */
	uint8_t (*rvl)[16];
	uint64_t *rguid; /* switch GUID of each row */
	unsigned vls, maxsl;
	uint64_t *lost; /* the pairs not delivered (as pkey) */
	uint32_t nlost, caplost;
} hdor_qos_t;

typedef struct {
	int *cost; /* per local switch of the group: links to M */
	pmask_t *cm; /* candidate ports */
	/* per member slot: links from the member to M */
	int *icost;
	pmask_t *im;
	int reach; /* some switch of the group reaches M */
} hig_t;

typedef struct {
	pmask_t m;
	uint32_t cnt, np; /* LIDs that took m so far; |m| */
} hcnt_t;

/*
 * What the degraded passes against one KNS keep from pass to pass, so that a
 * pass costs what its failures touch (docs/plugin.md "The degraded pass"):
 * the new tables and the affected marks, equal to the fault-free tables and
 * to "not affected" but at the entries the last pass changed -- listed, and
 * restored at the start of the next -- per LID what its fault-free row holds
 * (KR_*), and the routes inside the groups no failure touches.
 */
typedef struct hdor_kept {
	uint8_t *tab; /* K->nlid * K->nrow: the new tables (DTAB) */
	uint8_t *aff; /* K->nlid * K->nrow: 1 not affected, 2 affected */
	uint8_t *krow; /* K->nlid: KR_* */
	/* the last pass's affected entries: its LIDs ascending, each one's
	 * switches (base nodes, CSR) */
	uint32_t nalid, capalid, capaoff, *alid, *aoff;
	uint32_t nab, capab;
	int *ab;
	/* the LIDs whose row holds no route now (no owner; a route before) */
	uint32_t ngone, capgone, *gone;
	/* the routes inside each remembered group toward each member while it
	 * is intact (no failure at its switches, their links): K->ng arrays of
	 * kign[g] member slots, made when first needed */
	hig_t **kig;
	uint32_t *kign;
} hdor_kept_t;

/* a base node's per-LID scratch in the degraded pass: the search's key (bln,
 * bv), how it was reached (via, vslot, fdim), its fault-free length when
 * fixed (fixln), the memo of its fault-free route (ffs: the LID it is for;
 * ffl, ffx), the mark of R (rst) */
typedef struct {
	int bln, bv, fdim, via, vslot, fixln, ffl, ffx, rst;
	uint32_t ffs;
	uint8_t done, fixed;
} __attribute__((aligned(64))) hnode_t;

/* one degraded pass */
typedef struct hdor_deg {
	hdor_kns_t *K;
	const struct hdor_node **cur; /* base node -> its node now, NULL */
	uint8_t *ok; /* per slot: the remembered link works */
	uint32_t nl; /* highest current LID + 1 */
	int *onode; /* current LID owners (base node, port), -1 */
	uint8_t *oport;
	uint32_t nowned;
	/* K->kept's: the new tables (DTAB), and whether each entry is affected
	 * (1 no, 2 yes), by LID (K->nlid * K->nrow; LIDs from nl on unused) */
	uint8_t *tab, *aff;
	/* the owned LIDs that may have an affected entry, ascending */
	uint32_t *clist, nclist;
	int full; /* opts.degraded_full */
	/* groups: components of the remembered groups' surviving switches */
	int ng;
	int *gof, *glocal; /* base node -> component, local index */
	int *gdim;
	uint32_t *gsoff;
	int *gsw;
	uint32_t *gmoff; /* members (GUID order) */
	int *gmem;
	uint32_t *rgoff; /* router -> its components by dimension */
	int *rgl;
	int *rgslot; /* the router's member slot in each of those */
	hig_t **ig; /* per component, per member slot */
	uint8_t *igkept; /* a component's ig is K->kept's (an intact group) */
	/* spreading counters per switch row */
	hcnt_t **cnt;
	uint32_t *ncnt, *capcnt;
	/* per LID scratch: per base node, one line; and lists */
	hnode_t *nd;
	int *fixlist, *exitof, *dist, *q, qh, qt; /* switch_dist's search */
	int *exitslot; /* the exit's member slot in its group, -1 */
	/* the live switches and this LID's affected switches */
	int *lsw, *alist, *seed;
	uint32_t nlsw, nalist, nseed;
	/* each live switch's live switch neighbours over working links, as
	 * (node, row, the neighbour's port toward it) */
	uint32_t *upoff, *uprow;
	int *upx;
	uint8_t *upport;
	/* each switch's neighbour switches over its working links */
	uint32_t *swoff;
	int *swnb;
	/* the groups and routers (G, R) of this LID: lists and marks */
	int *glist, *rlist, *gst, stamp;
	/* each group of G's affected members (lists in GUID order) */
	int *amhead, *amtail, *amw, *amslot, *amnext;
	uint64_t *rbits;
	uint32_t ngl, nrl;
	pmask_t *cand;
	uint8_t *has;
	int dist_target;
	/* results */
	unsigned vls, vlcap;
	uint32_t detoured, extra_max;
	double extra_mean;
	hdor_qos_t *qos;
	uint32_t nrouters, nswitches, nhcas;
	uint32_t dead_nodes, dead_links;
	int own_hops;
} hdor_deg_t;

#define DTAB(D, r, lid) ((D)->tab[(size_t)(lid) * (D)->K->nrow + (r)])

static inline int kpeer(const hdor_kns_t *K, int b, unsigned port)
{
	return port < K->np[b] ? K->peer[K->poff[b] + port] : -1;
}

/* the remembered link of b's port works now */
static inline int works(const hdor_deg_t *D, int b, unsigned port)
{
	return port < D->K->np[b] && D->ok[D->K->poff[b] + port];
}

static inline uint8_t t0(const hdor_kns_t *K, int b, uint32_t lid)
{
	return lid < K->nlid ? KLFT(K, K->row[b], lid) : HDOR_NO_PATH;
}

/* ------------------------------------------------------------------------ */
/* The engine: what it knows across passes, what the front end tells it     */

/* the phases of a pass, in the order of its summary line */
enum {
	/* the remembered KNS: read, compared, first sight */
	PH_KNS,
	PH_IDENT, /* complete: nodes and links, identification */
	/* dimensions, coordinates, in-group distances */
	PH_COORDS,
	PH_SETS, /* candidate port sets and LID targets */
	/* degraded: groups, levels, the fault-free start */
	PH_STRUCT,
	PH_AFFECTED, /* the entries whose route touches a failure */
	PH_DETOURS, /* their new routes */
	PH_SLVL, /* path SLs, SL2VL rows, their publication */
	PH_HOPS, /* OpenSM's hop matrices */
	PH_OSM, /* OpenSM between the two callbacks */
	PH_LFT, /* the new tables */
	PH_DUMP, /* opensm-hdor.dump */
	PH_STATE, /* the KNS remembered, its state file */
	PH_N
};

typedef void (*hdor_log_fn)(void *arg, int level, const char *msg);

/* what the front end sets before a pass (OpenSM: its options) */
struct hdor_opts {
	char conf_path[4096]; /* the hdor.conf to read ("" none) */
	int conf_named; /* named by an option: must exist */
	char state_path[4096]; /* the remembered state ("" none) */
	char dump_path[4096]; /* opensm-hdor.dump ("" none) */
	unsigned max_op_vls; /* OpenSM's max_op_vls (0: no cap) */
	unsigned vls_limit; /* VLs the ports offer at most (0: VLCap) */
	int qos; /* OpenSM programs hdor's SL2VL tables */
	int use_ucast_cache;
	/*
	 * the front end keeps its switches' tables from pass to pass and does
	 * not prepare them (the offline front end): a degraded pass writes only
	 * what differs from the last one, a complete pass prepares them first;
	 * 0 (OpenSM): every pass writes whole tables into prepared ones
	 */
	int tables_kept;
	/* a degraded pass looks at every LID and every pair and writes whole
	 * tables, as before it was incremental (to compare the two) */
	int degraded_full;
};

/*
 * With tables_kept: what the model's switches hold -- the tables of KNS
 * `serial` as a pass with nothing failed would write them, but at the
 * entries listed (a degraded pass's changes, as in hdor_kept_t; and the rows
 * of its dead switches); serial 0: unknown
 */
struct hdor_written {
	uint64_t serial;
	const struct hdor_node **mnode; /* per base node: the switch written */
	uint32_t nmnode;
	uint32_t nalid, capalid, capaoff, *alid, *aoff;
	uint32_t nab, capab;
	int *ab;
	uint32_t ngone, capgone, *gone;
	uint32_t ndead, capdead;
	int *dead;
};

typedef struct hdor_engine {
	struct hdor_opts opts;
	hdor_log_fn log;
	void *log_arg;
	const struct hdor_fabric *fab; /* of this pass */
	hdor_pass_t *pass; /* a complete pass, until its tables */
	hdor_deg_t *deg; /* the same, for a degraded KNS */
	hdor_kns_t *kns; /* the complete KNS hdor knows */
	/* path SLs and SL2VL of the last degraded pass */
	hdor_qos_t *qos;
	hdor_qos_t *qos_old; /* the previous one: SA threads may read it */
	struct hdor_written written; /* with opts.tables_kept */
	/* per node of the model: its base node found at the last pass */
	int *bidx;
	uint32_t nbidx;
	unsigned long passes;
	struct timespec deg_t0; /* start of a degraded pass */
	int code; /* HD_* of reason */
	char reason[512];
	int loaded; /* hdor.conf or the state read */
	int kns_dirty; /* kns changed: write the state */
	int conf_dirty; /* a device of hdor.conf was replaced */
	/* why hdor.conf cannot be used ("" when it can) */
	char conf_bad[600];
	int conf_bad_code; /* HD_CONF_READ or HD_CONF_SYNTAX */
	/* what this pass learnt, for its summary line */
	char note[512];
	struct timespec ph_t; /* end of the last phase */
	uint64_t ph[16]; /* ns per phase (PH_*) */
	size_t mem0, mem_peak; /* heap in use at the start, the most since */
	/* the last pass, for a front end that reports it */
	int last_kind; /* HDOR_PASS_* */
	unsigned last_k, last_n, last_s;
	uint32_t last_switches, last_lids;
	unsigned last_vls, last_vlcap, last_maxsl;
	uint32_t last_dead_links, last_dead_nodes, last_detoured,
		last_extra_max;
	double last_extra_mean;
} hdor_engine_t;

enum { HDOR_PASS_NONE, HDOR_PASS_COMPLETE, HDOR_PASS_DEGRADED };

/* ------------------------------------------------------------------------ */
/* The engine's entry points for the front ends (osm_hdor_engine.c)         */

void hdor_engine_init(hdor_engine_t *e, hdor_log_fn log, void *arg);
void hdor_engine_release(hdor_engine_t *e);
/* 1 degraded, 0 complete, -1 declined (logged) */
int hdor_prepare(hdor_engine_t *e, const struct hdor_fabric *fab);

/* where a pass writes OpenSM's hop matrices: the row of `node` toward `lid`
 * (np entries), NULL when it cannot (OpenSM then builds them) */
struct hdor_hop_sink {
	uint8_t *(*row)(void *arg, const struct hdor_node *node, uint16_t lid);
	void *arg;
};
/* 0 done (or none wanted), 1 OpenSM builds them */
int hdor_hop_matrices(hdor_engine_t *e, int want,
		      const struct hdor_hop_sink *sink);
/* the prepared pass's tables into the model's switches; 0, or -1 */
int hdor_tables(hdor_engine_t *e);
/* with opts.tables_kept: the front end's tables were replaced (their content
 * is unknown to the engine) */
void hdor_tables_forget(hdor_engine_t *e);
uint8_t hdor_path_sl(hdor_engine_t *e, uint8_t hint, uint16_t slid,
		     uint16_t dlid);
int hdor_sl2vl_on(hdor_engine_t *e);
int hdor_sl2vl_row(hdor_engine_t *e, uint64_t guid, uint8_t in_port,
		   uint8_t out_port, uint8_t vl[16]);

/* a multicast group's tree over the switches a front end gives (section 15):
 * links that work and forward the group (CSR off/port/rport/idx), each
 * switch's new table (lft, top), the members' switches and ports */
struct hdor_mcast {
	int nsw;
	const uint64_t *guid;
	const uint16_t *lid;
	uint8_t *const *lft;
	const uint32_t *top;
	const uint32_t *off;
	const uint8_t *port, *rport;
	const int *idx;
	unsigned nmem;
	int *msw;
	uint8_t *mport;
	void (*set)(void *arg, int sw, uint8_t port);
	void *arg;
};
/* 0 every member in the tree, 1 some left out (logged), -1 out of memory */
int hdor_mcast_tree(hdor_engine_t *e, uint16_t mlid, struct hdor_mcast *mc);

/* ------------------------------------------------------------------------ */
/* Inside the core                                                          */

/* osm_hdor_util.c: allocation, phases, declines, sorting, the KNS's arrays */
void *hdor_calloc(size_t n, size_t sz);
void hdor_free_all(void **p, size_t n);
uint64_t hdor_usec_since(const struct timespec *t0);
void hdor_ph_start(hdor_engine_t *e, const struct timespec *t0);
void hdor_ph_lap(hdor_engine_t *e, int id);
void hdor_ph_mark(hdor_engine_t *e, int id);
size_t hdor_ph_text(const hdor_engine_t *e, char *buf, size_t sz, int from,
		    int to, const char *hops);
uint64_t hdor_ph_sum(const hdor_engine_t *e, int from, int to);
const char *hdor_desc(const struct hdor_node *node);
int hdor_decline(hdor_engine_t *e, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
int hdor_declinec(hdor_engine_t *e, int code, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
void hdor_log(hdor_engine_t *e, int level, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
void hdor_log_error(hdor_engine_t *e, int code, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
int hdor_hput(hdor_pass_t *P, const struct hdor_node *node, int val);
int hdor_hget(const hdor_pass_t *P, const struct hdor_node *node);
void hdor_pass_free(hdor_pass_t *P);
int hdor_cmp_u64(uint64_t a, uint64_t b);
int hdor_cmp_int(const void *a, const void *b);
int hdor_cmp_u32(const void *a, const void *b);
int hdor_cmp_u64p(const void *a, const void *b);
extern const hdor_pass_t *hdor_sort_pass;
int hdor_cmp_router_guid(const void *a, const void *b);
int hdor_cmp_group_key(const void *a, const void *b);
int hdor_cmp_sw_guid(const void *a, const void *b);
int hdor_cmp_ca_guid(const void *a, const void *b);
int hdor_intern_set(hdor_pass_t *P, int w, const pmask_t *m);
int hdor_grow(void *pp, uint32_t n, uint32_t *cap, size_t sz);
int hdor_reserve(void *pp, uint32_t need, uint32_t *cap, size_t sz);
int hdor_find_u64(const uint64_t *a, uint32_t n, uint64_t key);
void hdor_kns_free(hdor_kns_t *K);
void hdor_qos_free(hdor_qos_t *Q);
void hdor_deg_free(hdor_deg_t *D);
int hdor_kns_find(const hdor_kns_t *K, uint64_t guid);
int hdor_kns_index(hdor_kns_t *K);
hdor_kns_t *hdor_kns_alloc(uint32_t nn, unsigned k, unsigned n, unsigned s,
			   int origin);
int hdor_kns_alloc_slots(hdor_kns_t *K);
const char *hdor_kind_word(uint8_t type);
int hdor_node_kind(const struct hdor_node *node);

typedef struct {
	uint64_t guid;
	int kind, idx;
} hnode_ord_t;
int hdor_cmp_node_ord(const void *a, const void *b);

static inline void mask_set(pmask_t *m, unsigned p)
{
	m->m[p >> 6] |= 1ULL << (p & 63);
}

static inline int mask_empty(const pmask_t *m)
{
	return !(m->m[0] | m->m[1] | m->m[2] | m->m[3]);
}

static inline uint8_t pick(hdor_pass_t *P, int id)
{
	hset_t *s = &P->sets[id];

	if (s->np == 1)
		return P->pool[s->poff];
	return P->pool[s->poff + (s->cnt++ % s->np)];
}

/* osm_hdor_ident.c: nodes and links, identification, dimensions, coordinates
 * (docs sections 1-3) */
int hdor_pass_alloc(hdor_pass_t *P);
int hdor_collect(hdor_engine_t *e, hdor_pass_t *P);
int hdor_structure(hdor_engine_t *e, hdor_pass_t *P);
int hdor_kns_counts(hdor_engine_t *e, hdor_pass_t *P);
int hdor_uf_find(int *uf, int x);
void hdor_join_other_dimensions(const hdor_pass_t *P, int *uf, const int *dims,
				int d);
int hdor_lines_and_points(hdor_engine_t *e, hdor_pass_t *P);
int hdor_dims_and_coords(hdor_engine_t *e, hdor_pass_t *P);

/* osm_hdor_lft.c: candidate sets, LID targets, the tables, the dump
 * (docs sections 4-5) */
int hdor_group_distances(hdor_engine_t *e, hdor_pass_t *P);
int hdor_candidate_sets(hdor_engine_t *e, hdor_pass_t *P);
int hdor_lid_targets(hdor_engine_t *e, hdor_pass_t *P);
int hdor_analyse(hdor_engine_t *e, hdor_pass_t *P);
void hdor_route_all(hdor_pass_t *P);
void hdor_put_coords(FILE *f, const uint8_t *c, unsigned n, int skip);
FILE *hdor_dump_open(hdor_engine_t *e, char *tmp, size_t tmpsz);
int hdor_dump_close(FILE *f, const char *tmp, const char *path);
int hdor_write_dump(hdor_engine_t *e, hdor_pass_t *P);

/* osm_hdor_hops.c: OpenSM's hop matrices, when its routing dumps need them */
int hdor_closed_form_ok(const hdor_pass_t *P);
int hdor_fill_hops(hdor_pass_t *P, const struct hdor_hop_sink *sink);
int hdor_fill_hops_bfs(hdor_pass_t *P, const struct hdor_hop_sink *sink);
int hdor_deg_fill_hops(hdor_deg_t *D, const struct hdor_hop_sink *sink);

/* osm_hdor_kns.c: the KNS remembered, and the fabric compared with it */
hdor_kns_t *hdor_kns_remember(hdor_engine_t *e, hdor_pass_t *P,
			      const hdor_kns_t *Kin);
int hdor_replacements(hdor_engine_t *e, hdor_deg_t *D,
		      const struct hdor_node **unknown, uint32_t nu,
		      int strict);
int hdor_deg_match(hdor_engine_t *e, hdor_deg_t *D);
int hdor_kept_start(hdor_engine_t *e, hdor_deg_t *D);
int hdor_kept_note(hdor_deg_t *D, uint32_t lid);
void hdor_kept_free(hdor_kept_t *k, int ng);
void hdor_hig_free(hig_t *h, uint32_t n);

/* osm_hdor_detour.c: the degraded routes (docs section 6) */
int hdor_deg_route(hdor_engine_t *e, hdor_deg_t *D);
int hdor_affected(hdor_deg_t *D, int b, uint32_t lid, int depth);

/* osm_hdor_slvl.c: path SLs and SL2VL rows, the degraded tables and dump */
int hdor_deg_sls(hdor_engine_t *e, hdor_deg_t *D);
unsigned hdor_ports_vlcap(hdor_engine_t *e, const hdor_deg_t *D);
int hdor_write_dump_degraded(hdor_engine_t *e, hdor_deg_t *D);
void hdor_deg_write_tables(hdor_deg_t *D);
int hdor_deg_write_kept(hdor_engine_t *e, hdor_deg_t *D);
void hdor_prepare_tables(const struct hdor_fabric *fab);
void hdor_written_free(struct hdor_written *W);
void hdor_qos_publish(hdor_engine_t *e, hdor_qos_t *Q);

/* osm_hdor_conf.c: a KNS from elsewhere, the file format */
int hdor_kns_place(hdor_engine_t *e);
hdor_kns_t *hdor_kns_build(hdor_engine_t *e, const hdor_kns_t *Kin,
			   int compute);
int hdor_kns_read(hdor_engine_t *e, const char *path, int origin,
		  hdor_kns_t **out);
int hdor_kns_write(const hdor_kns_t *K, const char *path, const char *comment);

/* osm_hdor_sight.c: identification at first sight (docs section 7) */
hdor_kns_t *hdor_first_sight(hdor_engine_t *e, hdor_pass_t *P, unsigned *nphr,
			     unsigned *nphs, unsigned *nphl);
void hdor_phantom_descs(hdor_kns_t *K);

#endif /* OSM_HDOR_H */
