"""Graph passes: functions Graph -> Graph that attach attributes.

infer.infer_shape / infer.infer_type, gradient.gradient, plan_memory.plan_memory,
place_device.place_device.
"""
