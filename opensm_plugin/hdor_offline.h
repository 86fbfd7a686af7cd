/* SPDX-License-Identifier: MIT */
/*
 * hdor_offline.h -- the hdor engine on a discovered fabric, without OpenSM
 * (libhdorcore.so; ibtool's ibtool/routing/hdor_c.py uses it through ctypes).
 *
 * A handle is one engine that remembers the KNS across passes, as the engine
 * inside a long-running OpenSM does, and one fabric at a time:
 *
 *	h = hdor_off_new(8);			(the VLs the ports offer)
 *	hdor_off_fabric(h, nn, type, nports, guid, desc);
 *	hdor_off_links(h, nl, a, pa, b, pb);
 *	hdor_off_lids(h, np, node, port, lid, lmc, port_guid);
 *	hdor_off_route(h, "opensm-hdor.dump");	(complete: remembered)
 *	hdor_off_fabric(h, ...) ... hdor_off_route(h, NULL);	(degraded)
 *	hdor_off_lft(h, &stride), hdor_off_path_sls(h, ...), ...
 *	hdor_off_free(h);
 *
 * What-if (route every single failure of a fabric, many times): load the
 * fabric once, route it complete once (its fault-free state is kept), then
 * for each failure set hdor_off_fail(h, ...), hdor_off_route(h, NULL), read
 * the results, hdor_off_repair(h): no parsing, no copy of the fabric.
 *
 * Every function returns 0 on success, -1 declined (hdor_off_reason), -2 out
 * of memory or a bad argument (hdor_off_reason says which).
 */
#ifndef HDOR_OFFLINE_H
#define HDOR_OFFLINE_H

#include <stdint.h>

typedef struct hdor_off hdor_off_t;

hdor_off_t *hdor_off_new(unsigned vls);
void hdor_off_free(hdor_off_t *h);

/* the fabric: nn nodes (type 1 HCA, 2 switch, 3 router; ports 1..nports; GUID;
 * description), replacing the previous one (the remembered KNS stays) */
int hdor_off_fabric(hdor_off_t *h, uint32_t nn, const uint8_t *type,
		    const uint8_t *nports, const uint64_t *guid,
		    const char *const *desc);
/* its cables: node a port pa to node b port pb (node indices) */
int hdor_off_links(hdor_off_t *h, uint32_t nl, const uint32_t *a,
		   const uint8_t *pa, const uint32_t *b, const uint8_t *pb);
/* its LIDs: the base LID and LMC of each (node, port) that has one (a
 * switch's on port 0), with the port's GUID */
int hdor_off_lids(hdor_off_t *h, uint32_t np, const uint32_t *node,
		  const uint8_t *port, const uint16_t *lid, const uint8_t *lmc,
		  const uint64_t *port_guid);
/* on (the default): a degraded pass recomputes only what its failures touch
 * against the state kept from the passes before; 0: it looks at every LID and
 * every pair and writes whole tables (the same results, slower: to compare) */
void hdor_off_incremental(hdor_off_t *h, int on);
/* a description (hdor.conf) the engine reads at its first pass, "" none */
int hdor_off_description(hdor_off_t *h, const char *path);

/* failures on the loaded fabric: nodes, and cables by one of their ends;
 * what the SM's node (sm, UINT32_MAX: none) no longer reaches goes too, as
 * in OpenSM */
int hdor_off_fail(hdor_off_t *h, uint32_t sm, uint32_t nn,
		  const uint32_t *nodes, uint32_t nl, const uint32_t *node,
		  const uint8_t *port);
void hdor_off_repair(hdor_off_t *h);

/* a routing pass over the fabric (with its failures); its dump written to
 * dump_path unless NULL */
int hdor_off_route(hdor_off_t *h, const char *dump_path);
const char *hdor_off_reason(const hdor_off_t *h, int *code);
const char *hdor_off_log(const hdor_off_t *h);

/* the pass: [kind (1 complete, 2 degraded), k, n, s, switches, LIDs, VLs,
 * VLs the ports offer, failed links, failed nodes, pairs detoured, extra
 * links max, highest SL], and extra links mean */
int hdor_off_summary(const hdor_off_t *h, uint32_t out[13], double *mean);
/* the tables: one row of `stride` entries per switch node, in node order
 * (HCAs have none: their rows are not there), 255 no route */
const uint8_t *hdor_off_lft(const hdor_off_t *h, uint32_t *stride);
/* the tables as OpenSM's file engine reads them (ibtool's
 * formats/lft.write_file_engine): every switch there by GUID, every LID up to
 * the highest of now that has a route, with the port GUID of its owner
 * (lid_guid, 0: none) -- written to the open file fd; 0, or -1 (errno) */
int hdor_off_write_lft(const hdor_off_t *h, int fd, const uint64_t *lid_guid,
		       uint32_t nlid);
/* the LIDs each switch's table sends through each of its ports (as OpenSM's
 * port profiles count them): 256 per switch, in the order of hdor_off_lft */
const uint32_t *hdor_off_paths(const hdor_off_t *h);
/* which nodes are there (1) or failed or cut off (0), in the caller's order */
int hdor_off_here(const hdor_off_t *h, uint8_t *out);
/* a degraded pass's path SLs: the pairs (key dlid << 16 | slid) with an SL
 * above 0, and those not delivered */
uint32_t hdor_off_path_sls(const hdor_off_t *h, const uint64_t **key,
			   const uint8_t **sl, const uint64_t **lost,
			   uint32_t *nlost);
/* its SL2VL rows: switch GUID, in << 8 | out, 16 VLs each */
uint32_t hdor_off_sl2vl(const hdor_off_t *h, const uint64_t **guid,
			const uint64_t **io, const uint8_t **vl);
/* the entries a degraded pass recomputed (its affected entries: every other
 * entry of a switch there is the fault-free table's, or 255 for a LID whose
 * port is gone): switch (the caller's node index) and LID, by LID; 0 after
 * any other pass */
uint32_t hdor_off_changed(hdor_off_t *h, const uint32_t **node,
			  const uint32_t **lid);

#endif /* HDOR_OFFLINE_H */
