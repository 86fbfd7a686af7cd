"""What-if: every cable, switch and router failure of a fabric routed with its engine, measured by
verify's checks and ranked, before it happens (docs/whatif.md).

`failures` (which failures, named by cable ID), `engines` (the seam: hdor offline, every other
engine OpenSM on ibsim), `base` and `evaluate` (the fault-free fabric measured once; one failure as
the difference it makes), `rank` (each row, the criticality, the ranking, JSON and CSV), `job` and
`run` (the job kept in OUT/whatif.json, its chunks run here, on N local workers or as a Slurm job
array, resumed after any kill), `page` (the ranking drawn).
"""
