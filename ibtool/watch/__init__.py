"""The watcher: the fabric over time. Every interval one round (`collector`: the fabric discovered
and every port's counters, link state, width and speed, through `ibtool.mad`'s bulk MADs) is
written to the store (`store`: SQLite, one transaction a round), compared with the round before
and with the plan (`events`: links down and up, rates below the plan, devices and cables new, gone
or moved, counter resets and saturation, error rates over the thresholds, SM changes), served to
Prometheus (`exporter`) and drawn (`report`: the fabric with each cable coloured by its error rate,
the rising cables first). `plan` names what the fabric reports after the plan: cable IDs, labels,
rack and U; `service` is the loop `ibtool watch run` runs (signals, children, the clock).

    from ibtool.watch.service import Watcher
    w = Watcher(store_path, plan=PlanView("cellia"), clients=Clients(work), clock=fake_clock)
    w.step()          # one round: collected, stored, judged; its events returned
"""
