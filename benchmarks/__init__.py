"""The asv benchmark suite and side-by-side comparison scripts (see asv.conf.json)."""
