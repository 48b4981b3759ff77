"""Sum an ncu CSV (--csv --metrics gpu__time_duration.sum) by kernel name: the GPU time of
each kernel over the profiled launches, largest first.

    ncu --csv --metrics gpu__time_duration.sum python ... > k.csv; python ncu_sum.py k.csv
"""
import collections
import csv
import sys

#: microseconds a unit (ncu writes "nsecond" or "ns" by version)
UNITS = {"nsecond": 1e-3, "ns": 1e-3, "usecond": 1.0, "us": 1.0, "msecond": 1e3, "ms": 1e3}
rows = [r for r in csv.reader(open(sys.argv[1])) if len(r) > 10]
head = rows[0]
name_at, value_at, unit_at = head.index("Kernel Name"), head.index("Metric Value"), \
    head.index("Metric Unit")
tot, cnt = collections.Counter(), collections.Counter()
for r in rows[1:]:
    unit = r[unit_at]
    if unit not in UNITS:
        sys.exit(f"ncu_sum: unknown time unit {unit!r} (known: {sorted(UNITS)})")
    scale = UNITS[unit]
    k = r[name_at].split("(")[0][:60]
    tot[k] += float(r[value_at].replace(",", "")) * scale
    cnt[k] += 1
all_us = sum(tot.values())
print(f"total {all_us / 1e3:.2f} ms over {sum(cnt.values())} launches")
for k, v in tot.most_common(25):
    print(f"{v / 1e3:9.3f} ms {cnt[k]:6d}x  {k}")
