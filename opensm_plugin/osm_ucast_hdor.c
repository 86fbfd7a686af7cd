// SPDX-License-Identifier: MIT
/*
 * osm_ucast_hdor.c -- the OpenSM adapter of the Hybrid-DOR ("hdor") routing
 * engine for KNS (k-ary n-direct s-indirect) fabrics: it fills the engine's
 * fabric model from osm_subn_t, hands OpenSM's hop matrices and new tables to
 * the core, answers the SA's path SL and SL2VL questions from it, builds the
 * multicast trees, and registers the engine, two ways:
 *
 *   - plugin (default): built against OpenSM's headers as libhdor.so; the
 *     event plugin's create() registers the external routing engine "hdor"
 *     (opensm.conf: event_plugin_name hdor);
 *   - built in (in OpenSM's own tree, HAVE_CONFIG_H): osm_ucast_hdor_setup()
 *     is listed in static_routing_modules[].
 *
 * Every pass builds the model anew (OpenSM's drop manager may have freed any
 * node since); the core decides and analyses everything before anything is
 * written, so a decline (-1) leaves the tables clean for the next engine.
 */
#if HAVE_CONFIG_H
/* built in OpenSM's own tree: the built-in engine */
#include <config.h>
#define HDOR_INTREE 1
#endif
#include <opensm/osm_config.h>

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <syslog.h>
#include <unistd.h>

#include <complib/cl_qmap.h>
#include <opensm/osm_file_ids.h>
#ifdef HDOR_INTREE
#define FILE_ID OSM_FILE_UCAST_HDOR_C
#endif
#include <opensm/osm_opensm.h>
#include <opensm/osm_subnet.h>
#include <opensm/osm_switch.h>
#include <opensm/osm_node.h>
#include <opensm/osm_port.h>
#include <opensm/osm_log.h>
#include <opensm/osm_mcast_mgr.h>
#include <opensm/osm_multicast.h>
#include <opensm/osm_version.h>
#ifndef HDOR_INTREE
#include <opensm/osm_event_plugin.h>
#endif

#include "osm_hdor.h"

#define HDOR_CONF_DIR OPENSM_CONFIG_DIR

/* the engine inside OpenSM: the core's engine and this pass's model */
struct hdor_osm {
	osm_opensm_t *osm;
	hdor_engine_t e;
	struct hdor_fabric fab;
	struct hdor_port *ports;
	uint32_t *paths;
	int owned_by_engine; /* built in: the engine frees it in destroy() */
};

/* ------------------------------------------------------------------------ */
/* The layout guard, the log                                                */

static int hdor_layout_ok(osm_opensm_t *osm)
{
	/*
	 * The osm_version strcmp does not catch a plugin built with a
	 * different struct layout (e.g. osm_config.h included late,
	 * ENABLE_OSM_PERF_MGR mismatch): check back-pointers.
	 */
	return osm && osm->subn.p_osm == osm && osm->sm.p_subn == &osm->subn &&
	       osm->sm.p_log == &osm->log &&
	       osm->sm.ucast_mgr.p_subn == &osm->subn &&
	       osm->sm.ucast_mgr.p_log == &osm->log;
}

static void hdor_layout_complain(void)
{
	/* not in OpenSM's log: its structure is what does not match (ERR HD07
	 * all the same) */
	const char *msg =
		"ERR HD07: hdor: refusing to run: the OpenSM structure layout does not match the headers libhdor.so was built with (rebuild it against this OpenSM's libopensm-dev)";

	fprintf(stderr, "%s\n", msg);
	syslog(LOG_ERR, "%s", msg);
}

static void hdor_osm_log(void *arg, int level, const char *msg)
{
	struct hdor_osm *h = arg;
	osm_log_level_t l = level == HDOR_LOG_ERROR ? OSM_LOG_ERROR :
			    level == HDOR_LOG_INFO  ? OSM_LOG_INFO :
						      OSM_LOG_VERBOSE;

#ifdef FILE_ID
	if (osm_log_is_active_v2(&h->osm->log, l, FILE_ID))
		osm_log_v2(&h->osm->log, l, FILE_ID, "%s\n", msg);
#else
	if (osm_log_is_active(&h->osm->log, l))
		osm_log(&h->osm->log, l, "%s\n", msg);
#endif
}

/* ------------------------------------------------------------------------ */
/* The fabric model from OpenSM's subnet                                    */

static void model_free(struct hdor_osm *h)
{
	free(h->fab.nodes);
	free(h->fab.lports);
	free(h->fab.by_guid);
	free(h->ports);
	free(h->paths);
	memset(&h->fab, 0, sizeof(h->fab));
	h->ports = NULL;
	h->paths = NULL;
}

/* the highest LID of sw's new_lft that may be written: max_lid_ho, within
 * lft_size */
static uint32_t lft_top(const osm_switch_t *sw)
{
	uint32_t top = sw->max_lid_ho;

	if (top >= sw->lft_size)
		top = sw->lft_size ? (uint32_t)sw->lft_size - 1 : 0;
	return top;
}

/* a node of the model from OpenSM's node (its ports come later) */
static void model_node(struct hdor_node *x, osm_node_t *node)
{
	osm_switch_t *sw = node->sw;

	x->guid = cl_ntoh64(osm_node_get_node_guid(node));
	x->desc = node->print_desc ? node->print_desc : "";
	x->np = osm_node_get_num_physp(node);
	x->priv = node;
	switch (osm_node_get_type(node)) {
	case IB_NODE_TYPE_SWITCH:
		x->type = HDOR_NODE_SWITCH;
		x->base_lid = cl_ntoh16(osm_node_get_base_lid(node, 0));
		if (!sw || sw->p_node != node) {
			x->flags |= HDOR_NODE_NO_SWITCH;
			break;
		}
		x->lft = sw->new_lft;
		x->top = lft_top(sw);
		break;
	case IB_NODE_TYPE_CA:
		x->type = HDOR_NODE_CA;
		break;
	default:
		x->type = 0;
	}
}

/* node x's ports: cabled, healthy, to which node and port, VLCap */
static void model_ports(const struct hdor_fabric *fab, struct hdor_node *x)
{
	osm_node_t *node = x->priv;
	unsigned p;

	for (p = 0; p < x->np; p++) {
		osm_physp_t *ph = osm_node_get_physp_ptr(node, (uint8_t)p), *r;
		struct hdor_port *xp = &x->ports[p];

		if (!ph)
			continue;
		xp->vl_cap = ib_port_info_get_vl_cap(&ph->port_info);
		r = ph->p_remote_physp;
		if (!r)
			continue;
		xp->flags = HDOR_PORT_LINKED;
		if (osm_link_is_healthy(ph))
			xp->flags |= HDOR_PORT_HEALTHY;
		xp->peer_port = osm_physp_get_port_num(r);
		if (r->p_node)
			xp->peer = hdor_fabric_find(
				fab,
				cl_ntoh64(osm_node_get_node_guid(r->p_node)));
	}
}

/* the ports with LIDs, in OpenSM's port table order */
static int model_lports(struct hdor_osm *h)
{
	cl_qmap_t *pt = &h->osm->subn.port_guid_tbl;
	cl_map_item_t *it;
	uint32_t n = 0;

	h->fab.lports = calloc(cl_qmap_count(pt) + 1, sizeof(*h->fab.lports));
	if (!h->fab.lports)
		return -1;
	for (it = cl_qmap_head(pt); it != cl_qmap_end(pt);
	     it = cl_qmap_next(it)) {
		osm_port_t *port = (osm_port_t *)it;
		struct hdor_lport *lp = &h->fab.lports[n];
		uint16_t lo, hi;

		if (!port->p_node || !port->p_physp)
			continue;
		lp->node = hdor_fabric_find(
			&h->fab,
			cl_ntoh64(osm_node_get_node_guid(port->p_node)));
		if (!lp->node)
			continue;
		lp->port = osm_physp_get_port_num(port->p_physp);
		lp->guid = cl_ntoh64(osm_port_get_guid(port));
		osm_port_get_lid_range_ho(port, &lo, &hi);
		lp->lid = lo;
		lp->lmc = lo ? (uint8_t)__builtin_ctz((unsigned)(hi - lo + 1)) :
			       0;
		n++;
	}
	h->fab.nlp = n;
	return 0;
}

/* this pass's model: every node of OpenSM's node table, in its order */
static int model_build(struct hdor_osm *h)
{
	cl_qmap_t *tbl = &h->osm->subn.node_guid_tbl;
	cl_map_item_t *it;
	uint32_t i = 0, nports = 0, npaths = 0;
	struct hdor_fabric *fab = &h->fab;

	model_free(h);
	fab->nn = (uint32_t)cl_qmap_count(tbl);
	fab->nodes = calloc(fab->nn + 1, sizeof(*fab->nodes));
	if (!fab->nodes)
		return -1;
	for (it = cl_qmap_head(tbl); it != cl_qmap_end(tbl) && i < fab->nn;
	     it = cl_qmap_next(it)) {
		model_node(&fab->nodes[i], (osm_node_t *)it);
		nports += fab->nodes[i].np;
		if (fab->nodes[i].lft)
			npaths += fab->nodes[i].np;
		i++;
	}
	fab->nn = i;
	h->ports = calloc(nports + 1, sizeof(*h->ports));
	h->paths = calloc(npaths + 1, sizeof(*h->paths));
	if (!h->ports || !h->paths || hdor_fabric_index(fab))
		return -1;
	for (i = 0, nports = npaths = 0; i < fab->nn; i++) {
		struct hdor_node *x = &fab->nodes[i];

		x->ports = h->ports + nports;
		nports += x->np;
		if (x->lft) {
			x->paths = h->paths + npaths;
			npaths += x->np;
		}
	}
	for (i = 0; i < fab->nn; i++)
		model_ports(fab, &fab->nodes[i]);
	return model_lports(h);
}

/* the description: built in, the hdor_config option when set; else hdor.conf
 * beside the opensm.conf OpenSM was started with (-F; OpenSM's default is
 * /etc/opensm/opensm.conf), else in OpenSM's configuration directory
 * (/etc/opensm); the state in OpenSM's cache directory */
static int same_file(const char *a, const char *b)
{
	struct stat sa, sb;

	return stat(a, &sa) == 0 && stat(b, &sb) == 0 &&
	       sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
}

/* built in, the hdor_config option (opensm.conf, --hdor_config) */
static const char *named_conf(struct hdor_osm *h)
{
#ifdef HDOR_INTREE
	return h->osm->subn.opt.hdor_conf_file;
#else
	(void)h;
	return NULL;
#endif
}

static void search_conf(struct hdor_osm *h)
{
	struct hdor_opts *o = &h->e.opts;
	const char *cf = h->osm->subn.opt.config_file;
	const char *slash = cf ? strrchr(cf, '/') : NULL;
	char cand[4096];

	if (cf && *cf) {
		if (slash)
			snprintf(cand, sizeof(cand), "%.*s/%s",
				 (int)(slash - cf), cf, HDOR_CONF_NAME);
		else
			snprintf(cand, sizeof(cand), "%s", HDOR_CONF_NAME);
		/* (an opensm.conf itself called hdor.conf is OpenSM's, not a
		 * description) */
		if (access(cand, F_OK) == 0 && !same_file(cand, cf))
			snprintf(o->conf_path, sizeof(o->conf_path), "%s",
				 cand);
	}
	if (!o->conf_path[0] &&
	    access(HDOR_CONF_DIR "/" HDOR_CONF_NAME, F_OK) == 0)
		snprintf(o->conf_path, sizeof(o->conf_path), "%s",
			 HDOR_CONF_DIR "/" HDOR_CONF_NAME);
}

static void kns_paths(struct hdor_osm *h)
{
	struct hdor_opts *o = &h->e.opts;
	const char *named = named_conf(h);
	const char *cache = getenv("OSM_CACHE_DIR");

	o->conf_path[0] = '\0';
	/* named: read even when missing (then every pass declines, HD04) */
	o->conf_named = named != NULL;
	if (named)
		snprintf(o->conf_path, sizeof(o->conf_path), "%s", named);
	else
		search_conf(h);
	if (!cache || !*cache)
		cache = OSM_DEFAULT_CACHE_DIR;
	snprintf(o->state_path, sizeof(o->state_path), "%s/%s", cache,
		 HDOR_STATE_NAME);
}

/* OpenSM's options of this pass */
static void pass_opts(struct hdor_osm *h)
{
	struct hdor_opts *o = &h->e.opts;
	const char *dir = h->osm->subn.opt.dump_files_dir;

	if (!h->e.loaded)
		kns_paths(h);
	if (!dir || !*dir)
		dir = ".";
	snprintf(o->dump_path, sizeof(o->dump_path), "%s/%s", dir,
		 HDOR_DUMP_FILE);
	o->max_op_vls = h->osm->subn.opt.max_op_vls;
	o->qos = h->osm->subn.opt.qos;
	o->use_ucast_cache = h->osm->subn.opt.use_ucast_cache;
}

/* the model anew, and the core's pass on it: 1 degraded, 0 complete, -1
 * declined */
static int prepare(struct hdor_osm *h)
{
	if (model_build(h)) {
		hdor_log_error(
			&h->e, HD_NOMEM,
			"declined (HD01): out of memory; OpenSM falls back to the next routing engine");
		return -1;
	}
	pass_opts(h);
	return hdor_prepare(&h->e, &h->fab);
}

/* ------------------------------------------------------------------------ */
/* The hop matrices                                                         */

/*
 * While hdor routes, OpenSM reads the hop matrices only for its routing
 * dumps (opensm-lid-matrix.dump, opensm.fdbs: log flag 0x40): its multicast
 * trees are hdor's.  So without those dumps a pass leaves no hop-matrix row
 * at all: on KNS 16^3 the rows are 23.7 M allocations, most of a pass's
 * time, and ~1 GiB.
 */
static int hops_read(osm_opensm_t *osm)
{
	return osm_log_is_active_v2(&osm->log, OSM_LOG_ROUTING,
				    OSM_FILE_DUMP_C);
}

/*
 * frees the hop-matrix rows an earlier pass left (OpenSM's for another
 * engine, or hdor's with the dumps on).  Whoever built them gave every switch
 * a row toward its own LID, so when no switch has that row there is nothing to
 * free (and nothing to scan: a first pass on KNS 16^3 would read 350 MB of
 * empty row pointers).
 */
static void hops_drop(osm_opensm_t *osm)
{
	cl_qmap_t *tbl = &osm->subn.sw_guid_tbl;
	cl_map_item_t *it;
	int any = 0;
	unsigned i;

	for (it = cl_qmap_head(tbl); it != cl_qmap_end(tbl) && !any;
	     it = cl_qmap_next(it)) {
		osm_switch_t *sw = (osm_switch_t *)it;
		uint16_t lid = cl_ntoh16(osm_node_get_base_lid(sw->p_node, 0));

		any = sw->hops && lid < sw->num_hops && sw->hops[lid];
	}
	for (it = cl_qmap_head(tbl); any && it != cl_qmap_end(tbl);
	     it = cl_qmap_next(it)) {
		osm_switch_t *sw = (osm_switch_t *)it;

		for (i = 0; sw->hops && i < sw->num_hops; i++) {
			free(sw->hops[i]);
			sw->hops[i] = NULL;
		}
	}
}

/* the row of switch node toward lid in OpenSM's hop matrix, allocated when
 * missing; NULL when the switch has none for it */
static uint8_t *hop_row(void *arg, const struct hdor_node *node, uint16_t lid)
{
	osm_switch_t *sw = ((osm_node_t *)node->priv)->sw;
	uint8_t *row;

	(void)arg;
	if (!sw || !sw->hops || sw->num_hops <= sw->max_lid_ho ||
	    lid > sw->max_lid_ho)
		return NULL;
	row = sw->hops[lid];
	if (!row) {
		row = malloc(sw->num_ports);
		if (!row)
			return NULL;
		sw->hops[lid] = row;
	}
	return row;
}

/* ------------------------------------------------------------------------ */
/* The routing engine's callbacks                                           */

static int hdor_build_lid_matrices(void *context)
{
	struct hdor_osm *h = context;
	struct hdor_hop_sink sink = { hop_row, h };
	int want;

	if (!h || !hdor_layout_ok(h->osm)) {
		hdor_layout_complain();
		return -1;
	}
	if (getenv("HDOR_OPENSM_HOPS"))
		want = HOPS_OPENSM; /* OpenSM's min-hop matrices (the tests') */
	else
		want = hops_read(h->osm) ? HOPS_OWN : HOPS_NONE;
	if (prepare(h) < 0)
		return -1;
	if (want == HOPS_NONE)
		hops_drop(h->osm);
	return hdor_hop_matrices(&h->e, want, &sink);
}

static int hdor_build_fwd_tables(void *context)
{
	struct hdor_osm *h = context;
	uint32_t i;
	unsigned p;

	if (!h || !hdor_layout_ok(h->osm)) {
		hdor_layout_complain();
		return -1;
	}
	/* build_lid_matrices did not run in this pass: analyse now */
	if (!h->e.deg && (!h->e.pass || !h->e.pass->ready) && prepare(h) < 0)
		return -1;
	for (i = 0; i < h->fab.nn; i++) {
		struct hdor_node *x = &h->fab.nodes[i];
		osm_switch_t *sw = ((osm_node_t *)x->priv)->sw;

		if (!x->lft || !sw)
			continue;
		x->lft = sw->new_lft;
		x->top = lft_top(sw);
	}
	hdor_tables(&h->e);
	/* the port profiles count the paths (as osm_switch_count_path) */
	for (i = 0; i < h->fab.nn; i++) {
		struct hdor_node *x = &h->fab.nodes[i];
		osm_switch_t *sw = ((osm_node_t *)x->priv)->sw;

		if (!x->lft || !sw)
			continue;
		for (p = 0; p < x->np && p < sw->num_ports; p++)
			sw->p_prof[p].num_paths += x->paths[p];
	}
	return 0;
}

/* path_sl: the SL of a (source, destination) pair on a degraded KNS;
 * OpenSM's own SL otherwise */
static uint8_t hdor_osm_path_sl(void *context, uint8_t hint,
				const ib_net16_t slid, const ib_net16_t dlid)
{
	struct hdor_osm *h = context;

	if (!h)
		return hint;
	return hdor_path_sl(&h->e, hint, cl_ntoh16(slid), cl_ntoh16(dlid));
}

/* update_sl2vl: on a degraded KNS every SL2VL table is hdor's (entries not
 * set: VL 0) */
static void hdor_update_sl2vl(void *context, osm_physp_t *port, uint8_t in_port,
			      uint8_t out_port, ib_slvl_table_t *t)
{
	struct hdor_osm *h = context;
	uint8_t vl[16];
	unsigned sl;

	if (!h || !port || !port->p_node || !hdor_sl2vl_on(&h->e))
		return;
	memset(t, 0, sizeof(*t));
	if (osm_node_get_type(port->p_node) != IB_NODE_TYPE_SWITCH)
		return;
	if (hdor_sl2vl_row(&h->e,
			   cl_ntoh64(osm_node_get_node_guid(port->p_node)),
			   in_port, out_port, vl))
		return;
	for (sl = 0; sl < 16; sl++)
		ib_slvl_table_set(t, (uint8_t)sl, vl[sl]);
}

/* ------------------------------------------------------------------------ */
/* Multicast trees: OpenSM's switches and member ports for the core         */

/* the switches of a group's tree, in OpenSM's switch table order */
struct mc_osm {
	uint16_t mlid;
	int nsw;
	osm_switch_t **sw;
	int *by_lid; /* switch base LID -> index, -1 */
	uint64_t *guid;
	uint16_t *lid;
	uint8_t **lft;
	uint32_t *top;
	uint32_t *off;
	uint8_t *port, *rport;
	int *idx;
	int *msw;
	uint8_t *mport;
};

static void mc_osm_free(struct mc_osm *m)
{
	void *all[] = { m->sw,	m->by_lid, m->guid,  m->lid, m->lft, m->top,
			m->off, m->port,   m->rport, m->idx, m->msw, m->mport };

	hdor_free_all(all, sizeof(all) / sizeof(all[0]));
}

/* switch y forwards the group */
static int mc_forwards(const struct mc_osm *m, const osm_switch_t *y)
{
	return osm_switch_supports_mcast(y) && y->mcast_tbl.p_mask_tbl &&
	       m->mlid <= y->mcast_tbl.max_mlid_ho;
}

/* switch index of the far end of switch x's port p for this group, or -1: a
 * healthy link to a switch whose multicast table holds the MLID */
static int mc_link(const struct mc_osm *m, int x, unsigned p, uint8_t *rport)
{
	osm_physp_t *ph, *rp;
	osm_switch_t *y;
	int i;

	if (p == 0 || p >= m->sw[x]->num_ports)
		return -1;
	ph = osm_node_get_physp_ptr(m->sw[x]->p_node, (uint8_t)p);
	if (!ph || !osm_link_is_healthy(ph))
		return -1;
	rp = osm_physp_get_remote(ph);
	if (!rp || !rp->p_node || !(y = rp->p_node->sw))
		return -1;
	i = m->by_lid[cl_ntoh16(osm_node_get_base_lid(rp->p_node, 0))];
	if (i < 0 || m->sw[i] != y || !mc_forwards(m, y))
		return -1;
	*rport = osm_physp_get_port_num(rp);
	return i;
}

static int mc_switches(struct mc_osm *m, osm_opensm_t *osm)
{
	cl_qmap_t *tbl = &osm->subn.sw_guid_tbl;
	cl_map_item_t *it;
	int n = 0;

	m->nsw = (int)cl_qmap_count(tbl);
	m->sw = calloc(m->nsw + 1, sizeof(*m->sw));
	m->by_lid = malloc((IB_LID_UCAST_END_HO + 1) * sizeof(int));
	m->guid = calloc(m->nsw + 1, sizeof(*m->guid));
	m->lid = calloc(m->nsw + 1, sizeof(*m->lid));
	m->lft = calloc(m->nsw + 1, sizeof(*m->lft));
	m->top = calloc(m->nsw + 1, sizeof(*m->top));
	if (!m->sw || !m->by_lid || !m->guid || !m->lid || !m->lft || !m->top)
		return -1;
	memset(m->by_lid, 0xff, (IB_LID_UCAST_END_HO + 1) * sizeof(int));
	for (it = cl_qmap_head(tbl); it != cl_qmap_end(tbl) && n < m->nsw;
	     it = cl_qmap_next(it)) {
		osm_switch_t *sw = (osm_switch_t *)it;
		uint16_t lid = cl_ntoh16(osm_node_get_base_lid(sw->p_node, 0));

		m->sw[n] = sw;
		m->guid[n] = cl_ntoh64(osm_node_get_node_guid(sw->p_node));
		m->lid[n] = lid;
		m->lft[n] = sw->new_lft;
		m->top[n] = sw->max_lid_ho;
		if (lid && lid <= IB_LID_UCAST_END_HO)
			m->by_lid[lid] = n;
		n++;
	}
	m->nsw = n;
	return 0;
}

/* the working links between switches that forward the group */
static int mc_links(struct mc_osm *m)
{
	uint32_t e = 0;
	unsigned p;
	int i;

	for (i = 0; i < m->nsw; i++)
		e += m->sw[i]->num_ports;
	m->off = calloc(m->nsw + 1, sizeof(*m->off));
	m->idx = calloc(e + 1, sizeof(int));
	m->port = calloc(e + 1, 1);
	m->rport = calloc(e + 1, 1);
	if (!m->off || !m->idx || !m->port || !m->rport)
		return -1;
	for (i = 0, e = 0; i < m->nsw; i++) {
		m->off[i] = e;
		for (p = 1; p < m->sw[i]->num_ports; p++) {
			uint8_t rport = 0;
			int y = mc_link(m, i, p, &rport);

			if (y < 0)
				continue;
			m->idx[e] = y;
			m->rport[e] = rport;
			m->port[e++] = (uint8_t)p;
		}
	}
	m->off[m->nsw] = e;
	return 0;
}

/* each member port's switch and the port there (0: the switch itself is the
 * member); a member not on a switch that forwards the group is left out */
static unsigned mc_members(struct hdor_osm *h, struct mc_osm *m,
			   cl_qlist_t *list, unsigned *nmem)
{
	cl_list_item_t *li;
	unsigned lost = 0;

	for (li = cl_qlist_head(list); li != cl_qlist_end(list);
	     li = cl_qlist_next(li)) {
		osm_port_t *port = ((osm_mcast_work_obj_t *)li)->p_port;
		osm_physp_t *ph = port->p_physp, *rp;
		int s = -1;
		uint8_t pn = 0;

		if (port->p_node->sw) {
			s = m->by_lid[cl_ntoh16(
				osm_node_get_base_lid(port->p_node, 0))];
		} else if (ph && osm_link_is_healthy(ph) &&
			   (rp = osm_physp_get_remote(ph)) && rp->p_node->sw) {
			s = m->by_lid[cl_ntoh16(
				osm_node_get_base_lid(rp->p_node, 0))];
			pn = osm_physp_get_port_num(rp);
		}
		if (s < 0 || !mc_forwards(m, m->sw[s])) {
			hdor_log_error(
				&h->e, HD_MCAST,
				"multicast group 0x%X: member port 0x%016" PRIx64
				" is not on a switch that forwards the group",
				m->mlid, cl_ntoh64(port->guid));
			lost++;
			continue;
		}
		m->msw[*nmem] = s;
		m->mport[(*nmem)++] = pn;
	}
	return lost;
}

static void mc_set(void *arg, int sw, uint8_t port)
{
	struct mc_osm *m = arg;

	osm_mcast_tbl_set(&m->sw[sw]->mcast_tbl, m->mlid, port);
}

static ib_api_status_t hdor_mcast_build_stree(void *context,
					      osm_mgrp_box_t *mbox)
{
	struct hdor_osm *h = context;
	struct hdor_mcast mc;
	struct mc_osm m;
	cl_qlist_t list;
	cl_qmap_t map;
	unsigned nmem = 0, lost;
	int ret = -1;

	if (!h || !hdor_layout_ok(h->osm)) {
		hdor_layout_complain();
		return IB_ERROR;
	}
	memset(&m, 0, sizeof(m));
	m.mlid = mbox->mlid;
	/* an earlier engine's (OpenSM's) tree object; OpenSM has cleared this
	 * MLID's MFT entries */
	osm_purge_mtree(&h->osm->sm, mbox);
	if (osm_mcast_make_port_list_and_map(&list, &map, mbox)) {
		osm_mcast_drop_port_list(&list);
		hdor_log_error(
			&h->e, HD_NOMEM,
			"out of memory: no spanning tree for multicast group 0x%X",
			mbox->mlid);
		return IB_ERROR;
	}
	if (cl_qlist_count(&list) < 2) {
		osm_mcast_drop_port_list(&list);
		return IB_SUCCESS; /* as OpenSM: nothing to forward */
	}
	m.msw = calloc(cl_qlist_count(&list), sizeof(int));
	m.mport = calloc(cl_qlist_count(&list), 1);
	if (!m.msw || !m.mport || mc_switches(&m, h->osm) || mc_links(&m))
		goto out;
	lost = mc_members(h, &m, &list, &nmem);
	ret = 0;
	if (!nmem)
		goto out;
	mc = (struct hdor_mcast){ m.nsw, m.guid,  m.lid,   m.lft, m.top,
				  m.off, m.port,  m.rport, m.idx, nmem,
				  m.msw, m.mport, mc_set,  &m };
	ret = hdor_mcast_tree(&h->e, m.mlid, &mc);
	if (ret == 0 && lost)
		ret = 1;
out:
	if (ret < 0)
		hdor_log_error(
			&h->e, HD_NOMEM,
			"out of memory: no spanning tree for multicast group 0x%X",
			m.mlid);
	osm_mcast_drop_port_list(&list);
	mc_osm_free(&m);
	return ret ? IB_ERROR : IB_SUCCESS;
}

/* ------------------------------------------------------------------------ */
/* The engine in OpenSM: built in, or a plugin                              */

static struct hdor_osm *hdor_osm_new(osm_opensm_t *osm)
{
	struct hdor_osm *h = calloc(1, sizeof(*h));

	if (!h)
		return NULL;
	h->osm = osm;
	hdor_engine_init(&h->e, hdor_osm_log, h);
	return h;
}

/* everything the engine holds (destroy and the plugin's delete may both
 * run) */
static void hdor_osm_release(struct hdor_osm *h)
{
	hdor_engine_release(&h->e);
	model_free(h);
}

static void hdor_destroy(void *context)
{
	struct hdor_osm *h = context;

	if (!h)
		return;
	hdor_osm_release(h);
	if (h->owned_by_engine)
		free(h);
}

static void hdor_fill_engine(osm_routing_engine_t *re, struct hdor_osm *h)
{
	re->context = h;
	re->build_lid_matrices = hdor_build_lid_matrices;
	re->ucast_build_fwd_tables = hdor_build_fwd_tables;
	re->destroy = hdor_destroy;
	/* path SLs and SL2VL tables for a degraded KNS (OpenSM's own on a
	 * complete one; OpenSM calls update_sl2vl only with `qos TRUE`) */
	re->path_sl = hdor_osm_path_sl;
	re->update_sl2vl = hdor_update_sl2vl;
	/* multicast trees along hdor's routes: OpenSM's own need the hop
	 * matrices */
	re->mcast_build_stree = hdor_mcast_build_stree;
	/* everything else stays NULL: OpenSM's defaults (VL arbitration) */
}

#ifdef HDOR_INTREE
/* built in: listed in static_routing_modules[] of osm_opensm.c */
int osm_ucast_hdor_setup(struct osm_routing_engine *re, osm_opensm_t *osm)
{
	struct hdor_osm *h;

	if (!hdor_layout_ok(osm)) {
		hdor_layout_complain();
		return -1;
	}
	h = hdor_osm_new(osm);
	if (!h)
		return -1;
	h->owned_by_engine = 1;
	hdor_fill_engine(re, h);
	OSM_LOG(&osm->log, OSM_LOG_VERBOSE, "hdor: built-in engine set up\n");
	return 0;
}

#else
/* a plugin: an event plugin whose create() registers the engine */
static int hdor_setup(osm_routing_engine_t *re, osm_opensm_t *osm)
{
	struct hdor_osm *h = re->context;

	if (!h || h->osm != osm || !hdor_layout_ok(osm)) {
		hdor_layout_complain();
		return -1;
	}
	hdor_fill_engine(re, h);
	OSM_LOG(&osm->log, OSM_LOG_VERBOSE,
		"hdor: engine '%s' type %d set up\n", re->name, re->type);
	return 0;
}

static void *hdor_create(osm_opensm_t *osm)
{
	external_routing_engine_module_t mod;
	struct hdor_osm *h;
	cl_status_t st;

	if (!hdor_layout_ok(osm)) {
		hdor_layout_complain();
		return NULL;
	}
	h = hdor_osm_new(osm);
	if (!h)
		return NULL;
	mod.name = HDOR_NAME;
	mod.setup = hdor_setup;
	mod.context = h;
	st = osm_register_external_routing_engine(osm, &mod, h);
	if (st != CL_SUCCESS) {
		OSM_LOG(&osm->log, OSM_LOG_ERROR,
			"ERR HD08: hdor: cannot register the routing engine (status %d)\n",
			(int)st);
		free(h);
		return NULL;
	}
	OSM_LOG(&osm->log, OSM_LOG_INFO,
		"hdor: registered external routing engine 'hdor' (built against %s)\n",
		OSM_VERSION);
	return h;
}

static void hdor_delete(void *plugin_data)
{
	struct hdor_osm *h = plugin_data;

	if (!h)
		return;
	hdor_osm_release(h);
	free(h);
}

static void hdor_report(void *plugin_data, osm_epi_event_id_t event_id,
			void *event_data)
{
	(void)plugin_data;
	(void)event_id;
	(void)event_data;
}

osm_event_plugin_t osm_event_plugin = { OSM_VERSION, hdor_create, hdor_delete,
					hdor_report };
#endif
