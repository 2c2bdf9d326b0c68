"""Symbol.debug_str: nnvm's Symbol::Print listing."""
from mx_graph.graph import topological_order

__all__ = ["debug_str"]


def debug_str(sym):
    """Outputs, variables, then each operator node with its inputs and
    attributes, in topological order."""
    nodes = topological_order(sym._outputs)
    index = {n._id: i for i, n in enumerate(nodes)}
    lines = ["Symbol Outputs:"]
    for i, e in enumerate(sym._outputs):
        lines.append(f"\toutput[{i}]={e.node.name}({e.index})")
    for n in nodes:
        if n.is_variable:
            lines.append(f"Variable:{n.name}")
            continue
        lines.append("--------------------")
        lines.append(f"Op:{n.op.name}, Name={n.name}")
        lines.append("Inputs:")
        for i, e in enumerate(n.inputs):
            lines.append(f"\targ[{i}]={e.node.name}({e.index}) version=0")
        if n.attrs:
            lines.append("Attrs:")
            for k in sorted(n.attrs):
                lines.append(f"\t{k}={n.attrs[k]}")
        if n.control_deps:
            lines.append("Control deps:")
            for i, c in enumerate(n.control_deps):
                lines.append(f"\tcdep[{i}]={c.name} (node {index[c._id]})")
    return "\n".join(lines) + "\n"
