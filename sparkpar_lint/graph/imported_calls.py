"""Calls of functions defined in other modules of the project, read through their summaries.

`load_events(spark)` from `.sources` becomes one stage at the call site that stands for what the
helper does: a streaming read, a frame made unique on `id`, the columns it keeps. A helper that
applies a combiner it is given (`def merge(rdd, f): return rdd.reduceByKey(f)`) becomes that
operator at the call site, judging the function the caller passes. Every such stage has its span
in the calling file and carries `imported`, so findings there name the helper's file as a related
location and never get a fix aimed at another file.
"""

from __future__ import annotations

import dataclasses

import libcst as cst

from sparkpar_lint.graph.stage_graph import ImportedCall, Order, Partitioning, StageNode
from sparkpar_lint.graph.values import FunctionValue, MaybeSparkValue, SparkValue, Value


def imported_call(builder, qualified: str, call: cst.Call, args: list[Value], kwargs: dict[str, Value]) -> Value | None:
    """The value of calling project function `qualified`; None when it is not one."""
    project = builder.project
    if project is None:
        return None
    found = project.function(builder.graph.path, qualified)
    if found is None:
        return None
    summary, path = found

    def argument(index: int | None) -> Value | None:
        if index is None:
            return None
        if index < len(args):
            return args[index]
        return kwargs.get(summary.params[index]) if index < len(summary.params) else None

    for use in summary.combiners:
        function, written = argument(use.param), _argument_expr(call, use.param, summary.params)
        if isinstance(function, FunctionValue) and written is not None:
            _combiner_stage(builder, summary.name, path, call, use, function, written, argument(use.receiver_param))
    returned = summary.returns
    if returned is None:
        return MaybeSparkValue("<call>")
    source = argument(returned.param)
    upstream = builder.graph.node(source.node) if isinstance(source, SparkValue) and source.node is not None else None
    if returned.kind not in ("DataFrame", "GroupedData", "RDD", "DStream"):
        return SparkValue(returned.kind)
    inputs = [upstream.id] if upstream is not None else []
    key = (id(call), id(call), "<imported>", tuple(inputs))
    if key in builder.node_at:
        node = builder.graph.node(builder.node_at[key])
        return SparkValue(node.receiver, node.id, node.streaming)
    streaming = returned.streaming or bool(upstream and upstream.streaming)
    node = StageNode(
        id=0,
        receiver=returned.kind,
        method=summary.name,
        spec=None,
        span=builder.span(call),
        call=call,
        inputs=inputs,
        streaming=streaming,
        imported=ImportedCall(
            function=summary.name,
            path=path,
            sourced=returned.sourced,
            columns=returned.columns,
            unique=tuple(frozenset(s) for s in returned.unique),
        ),
    )
    builder.graph.add(node)
    builder.node_at[key] = node.id
    node.input_order = upstream.output_order if upstream else Order()
    node.input_partitioning = upstream.output_partitioning if upstream else Partitioning()
    node.has_watermark_upstream = returned.watermark or bool(upstream and upstream.has_watermark_upstream)
    if returned.order == "preserved":
        node.output_order = node.input_order
    elif returned.order != "unordered":
        node.output_order = Order(returned.order, returned.order_by, returned.order_keys, node.id)
    if returned.partitioning == "preserved":
        node.output_partitioning = node.input_partitioning
    else:
        node.output_partitioning = Partitioning(returned.partitioning, returned.partition_keys, node.id)
    return SparkValue(returned.kind, node.id, streaming)


def _argument_expr(call: cst.Call, index: int, params: tuple[str, ...]) -> cst.BaseExpression | None:
    positional = [a.value for a in call.args if a.keyword is None and not a.star]
    if index < len(positional):
        return positional[index]
    name = params[index] if index < len(params) else None
    return next((a.value for a in call.args if a.keyword is not None and a.keyword.value == name), None)


def _combiner_stage(
    builder, name: str, path: str, call: cst.Call, use, function: FunctionValue, slot_expr: cst.BaseExpression, receiver
) -> None:
    """The helper's operator, at the call site, applying the function the caller passes."""
    spec = builder.catalogue.operator(use.receiver, use.method)
    if spec is None:
        return
    upstream = receiver.node if isinstance(receiver, SparkValue) else None
    inputs = [upstream] if upstream is not None else []
    key = (id(call), id(function.function.node), use.method, tuple(inputs))
    if key in builder.node_at:
        return
    passed = dataclasses.replace(function.function, role=spec.function_role)
    # The operator's call as the helper writes it, with the caller's function in its slot: rules
    # read arguments by the operator's positions. Its own span is the call site's.
    if isinstance(use.slot, int):
        positional = [cst.Arg(cst.Name("_")) for _ in range(use.slot)] + [cst.Arg(slot_expr)]
        operator_call = cst.Call(func=cst.Attribute(cst.Name("_"), cst.Name(use.method)), args=positional)
    else:
        operator_call = cst.Call(
            func=cst.Attribute(cst.Name("_"), cst.Name(use.method)),
            args=[cst.Arg(slot_expr, keyword=cst.Name(use.slot))],
        )
    node = StageNode(
        id=0,
        receiver=use.receiver,
        method=use.method,
        spec=spec,
        span=builder.span(call),
        call=operator_call,
        inputs=inputs,
        streaming=bool(isinstance(receiver, SparkValue) and receiver.streaming),
        functions=[passed],
        function_slots={use.slot: passed},
        imported=ImportedCall(function=name, path=path),
    )
    builder.graph.add(node)
    builder.graph.user_functions.append(passed)
    builder.node_at[key] = node.id
    builder.derive_flow(node)


def caller_context(builder, function: cst.FunctionDef) -> dict[str, Value]:
    """Parameters of a top-level function bound to what every caller in the project's other
    modules passes: a DataFrame whose facts (read from a source, unique on, lookups joined in)
    hold at each of those calls. Without callers (or with one that shows nothing) a parameter
    stays unknown, as before."""
    from sparkpar_lint.graph.user_functions import parameter_names

    project = builder.project
    if project is None:
        return {}
    calls = project.callers(builder.graph.path, function.name.value)
    if not calls:
        return {}
    bound: dict[str, Value] = {}
    for index, name in enumerate(parameter_names(function)):
        facts = [call.argument(index, name) for call in calls]
        if any(f is None for f in facts) or len({f.kind for f in facts}) != 1:
            continue
        unique = set.intersection(*(set(f.unique) for f in facts))
        lookups = set.intersection(*(set(f.lookups) for f in facts))
        columns = {f.columns for f in facts}
        streaming = any(f.streaming for f in facts)
        node = StageNode(
            id=0,
            receiver=facts[0].kind,
            method=f"<arguments of {function.name.value}>",
            spec=None,
            span=builder.span(function.name),
            inputs=[],
            streaming=streaming,
            imported=ImportedCall(
                function=function.name.value,
                path="",  # the callers' facts, not a helper elsewhere: no related location
                sourced=all(f.sourced for f in facts),
                columns=columns.pop() if len(columns) == 1 else None,
                unique=tuple(frozenset(u) for u in sorted(unique)),
                lookups=tuple(sorted(lookups)),
            ),
        )
        builder.graph.add(node)
        bound[name] = SparkValue(facts[0].kind, node.id, streaming)
    return bound
