"""Cabling: what a crew orders, lays, labels and checks, from a placed plan (ibtool.layout).

    cable_list   the cable list: every cable with its permanent ID, wiring stage and both ends
    bom          the bill of materials
    cables_csv   cables.csv, the cable list a site edits, and its way back into a plan
    sheets       the package: index, rack, switch sheets (HTML), drawings, CSV files

`ibtool.layout` places devices and measures runs; this room turns them into cables.
"""
