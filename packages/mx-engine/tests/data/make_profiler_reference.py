"""Writes mxnet_profiler_table.txt and mxnet_profiler_stats.json in this
folder: MXNet 1.9.1's aggregate statistics (``profiler.dumps()`` as a table
and as JSON) after a few operators, a Task, a Frame, an Event, a Counter
and a Marker, so that test_profiler_layout.py holds this project's layout
(sections, headers, column names and widths) to MXNet's without MXNet:

    $MX_MXNET_PYTHON make_profiler_reference.py

(default interpreter /tmp/mxnet-venv/bin/python).  The timings in the files
are MXNet's and mean nothing here; only the layout is compared.
"""
import pathlib

import mxnet as mx
from mxnet import profiler

HERE = pathlib.Path(__file__).resolve().parent

profiler.set_config(profile_all=True, aggregate_stats=True,
                    filename=str(HERE / "mxnet_profiler_trace.json.unused"))
profiler.set_state("run")
a = mx.nd.ones((64, 64))
for _ in range(3):
    c = (mx.nd.dot(a, a) + 1).relu()
mx.nd.sum(c).wait_to_read()
domain = profiler.Domain("mydomain")
task = domain.new_task("mytask")
task.start()
task.stop()
frame = domain.new_frame("myframe")
frame.start()
frame.stop()
event = profiler.Event("myevent")
event.start()
event.stop()
counter = domain.new_counter("mycounter", 5)
counter += 3
counter -= 1
domain.new_marker("mymarker").mark("process")
mx.nd.waitall()
profiler.set_state("stop")
(HERE / "mxnet_profiler_table.txt").write_text(profiler.dumps())
(HERE / "mxnet_profiler_stats.json").write_text(profiler.dumps(format="json"))
