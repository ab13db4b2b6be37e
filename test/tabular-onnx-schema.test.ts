// Our ONNX protobuf schema: the readable onnx.proto and the JSON descriptor the parser loads are
// the same, the field numbers are the official ones, and proto2 packing matches what onnx writes.
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import protobuf from 'protobufjs';
import { describe, expect, it } from 'vitest';
import { AttributeProto, ModelProto, TensorProto } from '../src/tabular/onnx/proto.js';
import { ONNX_SCHEMA } from '../src/tabular/onnx/schema.js';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const PROTO = path.join(ROOT, 'src/tabular/onnx/onnx.proto');

describe('ONNX schema', () => {
  it('the JSON descriptor equals protobufjs\'s parse of onnx.proto', () => {
    const parsed = protobuf.parse(fs.readFileSync(PROTO, 'utf8')).root.toJSON();
    expect(JSON.parse(JSON.stringify(ONNX_SCHEMA))).toEqual(JSON.parse(JSON.stringify(parsed)));
  });

  // Field numbers from the official onnx/onnx.proto (IR version 12).
  const OFFICIAL: Record<string, Record<string, number>> = {
    'onnx.ModelProto': {
      irVersion: 1,
      producerName: 2,
      producerVersion: 3,
      domain: 4,
      modelVersion: 5,
      docString: 6,
      graph: 7,
      opsetImport: 8,
      metadataProps: 14,
      functions: 25,
    },
    'onnx.GraphProto': {
      node: 1,
      name: 2,
      initializer: 5,
      docString: 10,
      input: 11,
      output: 12,
      valueInfo: 13,
      sparseInitializer: 15,
      metadataProps: 16,
    },
    'onnx.NodeProto': {
      input: 1,
      output: 2,
      name: 3,
      opType: 4,
      attribute: 5,
      docString: 6,
      domain: 7,
      overload: 8,
      metadataProps: 9,
    },
    'onnx.AttributeProto': {
      name: 1,
      f: 2,
      i: 3,
      s: 4,
      t: 5,
      g: 6,
      floats: 7,
      ints: 8,
      strings: 9,
      tensors: 10,
      graphs: 11,
      docString: 13,
      tp: 14,
      typeProtos: 15,
      type: 20,
      refAttrName: 21,
      sparseTensor: 22,
      sparseTensors: 23,
    },
    'onnx.TensorProto': {
      dims: 1,
      dataType: 2,
      segment: 3,
      floatData: 4,
      int32Data: 5,
      stringData: 6,
      int64Data: 7,
      name: 8,
      rawData: 9,
      doubleData: 10,
      uint64Data: 11,
      docString: 12,
      externalData: 13,
      dataLocation: 14,
      metadataProps: 16,
    },
    'onnx.TensorProto.Segment': { begin: 1, end: 2 },
    'onnx.SparseTensorProto': { values: 1, indices: 2, dims: 3 },
    'onnx.ValueInfoProto': { name: 1, type: 2, docString: 3, metadataProps: 4 },
    'onnx.TypeProto': {
      tensorType: 1,
      sequenceType: 4,
      mapType: 5,
      denotation: 6,
      opaqueType: 7,
      sparseTensorType: 8,
      optionalType: 9,
    },
    'onnx.TypeProto.Tensor': { elemType: 1, shape: 2 },
    'onnx.TypeProto.Sequence': { elemType: 1 },
    'onnx.TypeProto.Map': { keyType: 1, valueType: 2 },
    'onnx.TensorShapeProto': { dim: 1 },
    'onnx.TensorShapeProto.Dimension': { dimValue: 1, dimParam: 2, denotation: 3 },
    'onnx.OperatorSetIdProto': { domain: 1, version: 2 },
    'onnx.StringStringEntryProto': { key: 1, value: 2 },
    'onnx.FunctionProto': { name: 1, input: 4, output: 5, attribute: 6, node: 7, opsetImport: 9, domain: 10, overload: 13 },
  };

  const root = protobuf.Root.fromJSON(ONNX_SCHEMA as unknown as protobuf.INamespace);
  for (const [typeName, fields] of Object.entries(OFFICIAL)) {
    it(`${typeName} has the official field numbers`, () => {
      const type = root.lookupType(typeName);
      for (const [field, id] of Object.entries(fields)) {
        expect(type.fields[field]?.id, `${typeName}.${field}`).toBe(id);
      }
    });
  }

  it('the enums have the official values', () => {
    const dataType = root.lookupEnum('onnx.TensorProto.DataType').values;
    expect(dataType).toMatchObject({ FLOAT: 1, UINT8: 2, INT8: 3, INT64: 7, STRING: 8, BOOL: 9, FLOAT16: 10, DOUBLE: 11, UINT64: 13, BFLOAT16: 16 });
    const attrType = root.lookupEnum('onnx.AttributeProto.AttributeType').values;
    expect(attrType).toMatchObject({ FLOAT: 1, INT: 2, STRING: 3, TENSOR: 4, GRAPH: 5, FLOATS: 6, INTS: 7, STRINGS: 8, SPARSE_TENSOR: 11, TYPE_PROTO: 13 });
    expect(root.lookupEnum('onnx.TensorProto.DataLocation').values).toEqual({ DEFAULT: 0, EXTERNAL: 1 });
  });

  it('writes proto2 encodings: repeated ints unpacked, tensor data packed', () => {
    // AttributeProto.ints (field 8, varint): one tag per element, as onnx writes them.
    expect(Array.from(AttributeProto.encode({ ints: [1, 2] } as never).finish())).toEqual([0x40, 1, 0x40, 2]);
    // TensorProto.float_data (field 4) is [packed = true]: one length-delimited record.
    expect(Array.from(TensorProto.encode({ floatData: [1] } as never).finish())).toEqual([0x22, 4, 0, 0, 0x80, 0x3f]);
    // TensorProto.dims (field 1) is not packed.
    expect(Array.from(TensorProto.encode({ dims: [2, 3] } as never).finish())).toEqual([0x08, 2, 0x08, 3]);
  });

  it('reads packed and unpacked repeated scalars alike', () => {
    // ints written packed (field 8, wire type 2) by some writers.
    const packed = Uint8Array.from([0x42, 2, 5, 6]);
    const decoded = AttributeProto.decode(packed) as unknown as { ints: { low: number }[] };
    expect(decoded.ints.map((v) => (typeof v === 'number' ? v : v.low))).toEqual([5, 6]);
    expect(ModelProto.fullName).toBe('.onnx.ModelProto');
  });
});
