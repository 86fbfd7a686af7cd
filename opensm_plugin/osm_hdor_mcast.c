// SPDX-License-Identifier: MIT
/*
 * osm_hdor_mcast.c -- a multicast group's spanning tree (docs/hdor.md
 * section 8): the union of hdor's own unicast routes from its members'
 * switches to one root switch, where a switch's parent is where its new table
 * sends the root's LID.  So it needs no hop matrices (OpenSM's min-hop tree is
 * built on them, and on a large KNS they cost most of a pass), it follows the
 * routes' dimension order, it avoids what a degraded pass avoids, and it has
 * no cycle (the routes to one LID form a tree).  The root: the middle switch
 * of the longest shortest path between two members' switches (two
 * breadth-first searches), moved down while it has a single branch and no
 * member port.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "osm_hdor.h"

/* the search's and the tree's state, per switch */
struct tree {
	struct hdor_mcast *mc;
	int *dist, *prev, *queue, *par, *seen, *path;
	uint8_t *memb, *on, *up, *dn;
};

/* switch index at the other end of switch x's port p for this group, or -1
 * (*rport: the port there) */
static int mc_link(const struct hdor_mcast *mc, int x, unsigned p,
		   uint8_t *rport)
{
	uint32_t a;

	if (p == 0)
		return -1;
	for (a = mc->off[x]; a < mc->off[x + 1]; a++)
		if (mc->port[a] == p) {
			if (rport)
				*rport = mc->rport[a];
			return mc->idx[a];
		}
	return -1;
}

/* hops from src to every switch (dist, -1 unreached; prev: the switch
 * before) */
static void mc_bfs(struct tree *t, int src)
{
	const struct hdor_mcast *mc = t->mc;
	int h = 0, q = 0, i;
	uint32_t a;

	for (i = 0; i < mc->nsw; i++)
		t->dist[i] = -1;
	t->dist[src] = 0;
	t->prev[src] = -1;
	t->queue[q++] = src;
	while (h < q) {
		int x = t->queue[h++];

		for (a = mc->off[x]; a < mc->off[x + 1]; a++) {
			int y = mc->idx[a];

			if (t->dist[y] >= 0)
				continue;
			t->dist[y] = t->dist[x] + 1;
			t->prev[y] = x;
			t->queue[q++] = y;
		}
	}
}

/* the member switch farthest from the last search's source (the first in
 * index order of equals; -1 when none is reached) */
static int mc_farthest(const struct tree *t)
{
	int i, best = -1;

	for (i = 0; i < t->mc->nsw; i++)
		if (t->memb[i] && t->dist[i] >= 0 &&
		    (best < 0 || t->dist[i] > t->dist[best]))
			best = i;
	return best;
}

/* the root: the middle of the longest shortest path between two members'
 * switches */
static int mc_root(struct tree *t)
{
	int a, b, root, x;

	mc_bfs(t, t->mc->msw[0]);
	a = mc_farthest(t);
	mc_bfs(t, a);
	b = mc_farthest(t);
	root = b;
	for (x = t->dist[b] / 2; x > 0; x--)
		root = t->prev[root];
	return root;
}

/* member i's switch up its route to the root, until a switch already in the
 * tree; -1 when there is no route (or a loop) */
static int mc_join(struct tree *t, unsigned i, uint16_t root_lid)
{
	const struct hdor_mcast *mc = t->mc;
	int x = mc->msw[i], len = 0;

	while (!t->on[x]) {
		/* (a switch not routed yet has no new table) */
		uint8_t out = mc->lft[x] && root_lid <= mc->top[x] ?
				      mc->lft[x][root_lid] :
				      0;
		uint8_t rport = 0;
		int y = mc_link(mc, x, out, &rport);

		if (y < 0 || t->seen[x] == (int)i + 1)
			return -1;
		t->seen[x] = (int)i + 1;
		t->path[len++] = x;
		t->up[x] = out;
		t->dn[x] = rport;
		t->par[x] = y;
		x = y;
	}
	while (len)
		t->on[t->path[--len]] = 1;
	return 0;
}

/* the root moves down while it has a single branch and no member port */
static int mc_lower(struct tree *t, int root)
{
	for (;;) {
		int kids = 0, kid = -1, y;

		if (t->memb[root])
			return root;
		for (y = 0; y < t->mc->nsw && kids < 2; y++)
			if (t->on[y] && y != root && t->par[y] == root) {
				kids++;
				kid = y;
			}
		if (kids != 1)
			return root;
		t->on[root] = 0;
		root = kid;
		t->par[root] = -1;
	}
}

static int tree_alloc(struct tree *t, int nsw)
{
	t->dist = hdor_calloc(nsw, sizeof(int));
	t->prev = hdor_calloc(nsw, sizeof(int));
	t->queue = hdor_calloc(nsw, sizeof(int));
	t->par = hdor_calloc(nsw, sizeof(int));
	t->seen = hdor_calloc(nsw, sizeof(int));
	t->path = hdor_calloc(nsw, sizeof(int));
	t->memb = hdor_calloc(nsw, 1);
	t->on = hdor_calloc(nsw, 1);
	t->up = hdor_calloc(nsw, 1);
	t->dn = hdor_calloc(nsw, 1);
	return t->dist && t->prev && t->queue && t->par && t->seen && t->path &&
			       t->memb && t->on && t->up && t->dn ?
		       0 :
		       -1;
}

static void tree_free(struct tree *t)
{
	void *all[] = { t->dist, t->prev, t->queue, t->par, t->seen,
			t->path, t->memb, t->on,    t->up,  t->dn };

	hdor_free_all(all, sizeof(all) / sizeof(all[0]));
}

/* the tables: member ports, and both ends of every tree link; the tree's
 * switches and depth */
static void mc_set(struct tree *t, int root, unsigned *reached, unsigned *size,
		   unsigned *depth)
{
	const struct hdor_mcast *mc = t->mc;
	unsigned i, d;
	int x, y;

	for (i = 0; i < mc->nmem; i++)
		if (mc->msw[i] >= 0) {
			mc->set(mc->arg, mc->msw[i], mc->mport[i]);
			(*reached)++;
		}
	for (x = 0; x < mc->nsw; x++) {
		if (!t->on[x])
			continue;
		(*size)++;
		if (x == root)
			continue;
		mc->set(mc->arg, x, t->up[x]);
		mc->set(mc->arg, t->par[x], t->dn[x]);
		for (d = 0, y = x; y != root; y = t->par[y])
			d++;
		if (d > *depth)
			*depth = d;
	}
}

int hdor_mcast_tree(hdor_engine_t *ctx, uint16_t mlid, struct hdor_mcast *mc)
{
	struct tree t = { .mc = mc };
	unsigned i, lost = 0, reached = 0, size = 0, depth = 0;
	struct timespec t0;
	int root, ret = -1;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	if (tree_alloc(&t, mc->nsw))
		goto out;
	for (i = 0; i < mc->nmem; i++)
		t.memb[mc->msw[i]] = 1;
	root = mc_root(&t);
	t.on[root] = 1;
	t.par[root] = -1;
	for (i = 0; i < mc->nmem; i++) {
		if (!mc_join(&t, i, mc->lid[root]))
			continue;
		hdor_log_error(
			ctx, HD_MCAST,
			"multicast group 0x%X: switch 0x%016" PRIx64
			" of a member has no working route to the tree's root 0x%016" PRIx64,
			mlid, mc->guid[mc->msw[i]], mc->guid[root]);
		t.memb[mc->msw[i]] = 0;
		mc->msw[i] = -1;
		lost++;
	}
	root = mc_lower(&t, root);
	mc_set(&t, root, &reached, &size, &depth);
	hdor_log(
		ctx, HDOR_LOG_VERBOSE,
		"hdor: multicast group 0x%X: %u member port(s), a tree of %u switch(es) rooted at 0x%016" PRIx64
		", depth %u, %" PRIu64 " us",
		mlid, reached, size, mc->guid[root], depth,
		hdor_usec_since(&t0));
	ret = lost ? 1 : 0;
out:
	tree_free(&t);
	return ret;
}
