"""The int8 MiniLM's word-embedding table, kept int8 in the embedder's memory.

The pinned model file stores each weight as int8 with float scales, and its graph
dequantises them (`Cast` to float, then `Mul` by the scales) before use. onnxruntime's
constant folding turns every such pair into an fp32 copy when the session is built: that is
what keeps the linear layers fast (without the folding a sentence took 98 ms instead of ~7),
but it also makes the word-embedding table (30,522 x 384, per-row scales) 45 MiB of fp32, of
which a sentence reads a few dozen rows. :func:`gather_int8_embeddings` rewrites the graph
so that the lookup gathers the int8 rows and their scales, then dequantises only those: the
same float multiplication of the same numbers, so every vector is bit-identical, and the
session holds 33 MiB less (docs/RESULTS.md, "Server memory at 10k, again").

The rewrite edits the protobuf's wire format (the `onnx` package is not a dependency): it
decodes the model's fields, the graph's fields and the nodes' fields, and copies everything
else (the weights, the shapes) through as bytes.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

# Field numbers in onnx.proto: ModelProto.graph, GraphProto.node, NodeProto's fields.
_MODEL_GRAPH = 7
_GRAPH_NODE = 1
_NODE_INPUT, _NODE_OUTPUT, _NODE_NAME, _NODE_OP_TYPE = 1, 2, 3, 4
_VARINT, _FIXED64, _LENGTH, _FIXED32 = 0, 1, 2, 5

WORD_EMBEDDINGS = "inner.embeddings.word_embeddings.weight"


@dataclass
class _Field:
    number: int
    raw: memoryview  # the whole field as encoded, key and value (a view: no copy)
    value: memoryview | None  # a length-delimited field's payload


def _read_varint(buf: memoryview, pos: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        byte = buf[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        if byte < 0x80:
            return value, pos
        shift += 7


def _varint(value: int) -> bytes:
    out = bytearray()
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def _fields(buf: memoryview) -> list[_Field]:
    fields: list[_Field] = []
    pos = 0
    while pos < len(buf):
        start = pos
        key, pos = _read_varint(buf, pos)
        number, wire = key >> 3, key & 7
        value = None
        if wire == _VARINT:
            _, pos = _read_varint(buf, pos)
        elif wire == _FIXED64:
            pos += 8
        elif wire == _FIXED32:
            pos += 4
        elif wire == _LENGTH:
            size, pos = _read_varint(buf, pos)
            value, pos = buf[pos : pos + size], pos + size
        else:
            raise ValueError(f"unsupported protobuf wire type {wire}")
        fields.append(_Field(number, buf[start:pos], value))
    return fields


def _bytes_field(number: int, payload: bytes) -> bytes:
    return _varint(number << 3 | _LENGTH) + _varint(len(payload)) + payload


@dataclass
class _Node:
    inputs: list[str]
    outputs: list[str]
    name: str
    op_type: str
    rest: list[memoryview]  # attributes, domain, doc string: copied as they are

    @classmethod
    def parse(cls, buf: memoryview) -> _Node:
        node = cls([], [], "", "", [])
        for field in _fields(buf):
            if field.number not in (_NODE_INPUT, _NODE_OUTPUT, _NODE_NAME, _NODE_OP_TYPE):
                node.rest.append(field.raw)
                continue
            text = str(field.value, "utf-8")
            if field.number == _NODE_INPUT:
                node.inputs.append(text)
            elif field.number == _NODE_OUTPUT:
                node.outputs.append(text)
            elif field.number == _NODE_NAME:
                node.name = text
            else:
                node.op_type = text
        return node

    def encode(self) -> bytes:
        parts: list[bytes | memoryview] = [
            _bytes_field(_NODE_INPUT, i.encode()) for i in self.inputs
        ]
        parts += [_bytes_field(_NODE_OUTPUT, o.encode()) for o in self.outputs]
        parts += [_bytes_field(_NODE_NAME, self.name.encode())]
        parts += [_bytes_field(_NODE_OP_TYPE, self.op_type.encode()), *self.rest]
        return b"".join(parts)


def gather_int8_embeddings(model: bytes, table: str = WORD_EMBEDDINGS) -> bytes:
    """The model with ``Gather(Mul(Cast(q), scale), ids)`` for ``table`` replaced by
    ``Mul(Cast(Gather(q, ids)), Gather(scale, ids))``, which needs the table's scales per row
    (shape [rows, 1], as in the pinned file); ValueError if the graph has no such pattern."""
    model_fields = _fields(memoryview(model))
    graph_at = [i for i, f in enumerate(model_fields) if f.number == _MODEL_GRAPH]
    if len(graph_at) != 1:
        raise ValueError("not an ONNX model with one graph")
    graph_fields = _fields(model_fields[graph_at[0]].value or memoryview(b""))
    nodes = {
        i: _Node.parse(f.value)
        for i, f in enumerate(graph_fields)
        if f.number == _GRAPH_NODE and f.value is not None
    }

    def only(what: str, match: Callable[[_Node], bool]) -> int:
        found = [i for i, n in nodes.items() if match(n)]
        if len(found) != 1:
            raise ValueError(f"the graph has {len(found)} {what} of {table}, not one")
        return found[0]

    mul_at = only("dequantising Mul", lambda n: n.op_type == "Mul" and n.outputs == [table])
    mul = nodes[mul_at]
    cast_at = only("Cast", lambda n: n.op_type == "Cast" and n.outputs == [mul.inputs[0]])
    gather_at = only("reader", lambda n: table in n.inputs)
    cast, gather = nodes[cast_at], nodes[gather_at]
    if gather.op_type != "Gather" or gather.inputs[0] != table or len(cast.inputs) != 1:
        raise ValueError(f"{table} is not read by one Gather of its rows")
    quantised, scales, ids = cast.inputs[0], mul.inputs[1], gather.inputs[1]
    rows = _Node(
        [quantised, ids], [f"{quantised}_rows"], f"{gather.name}_int8", "Gather", gather.rest
    )
    row_scales = _Node(
        [scales, ids], [f"{scales}_rows"], f"{gather.name}_scales", "Gather", gather.rest
    )
    dequantise = _Node([rows.outputs[0]], [f"{quantised}_rows_f"], cast.name, "Cast", cast.rest)
    scale = _Node(
        [*dequantise.outputs, *row_scales.outputs], gather.outputs, mul.name, "Mul", mul.rest
    )
    # In topological order, where the Gather was; the old Cast and Mul go.
    new_nodes = (rows, row_scales, dequantise, scale)
    replaced = b"".join(_bytes_field(_GRAPH_NODE, n.encode()) for n in new_nodes)
    graph = b"".join(
        replaced if i == gather_at else b"" if i in (cast_at, mul_at) else f.raw
        for i, f in enumerate(graph_fields)
    )
    return b"".join(
        _bytes_field(_MODEL_GRAPH, graph) if i == graph_at[0] else f.raw
        for i, f in enumerate(model_fields)
    )
