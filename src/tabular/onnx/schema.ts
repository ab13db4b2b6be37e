// The protobufjs descriptor of our ONNX subset: the JSON form of onnx.proto beside this file (same
// messages, fields and field numbers as the official onnx.proto, IR version 12). It lives in a
// TypeScript module so that the parser needs no file read at run time (tsc copies only .js into
// dist/). test/tabular-onnx-schema.test.ts checks that it equals protobufjs's parse of onnx.proto;
// after editing onnx.proto, regenerate it from the repository root with
//   node -e "const p=require('protobufjs'),fs=require('fs');console.log(JSON.stringify(p.parse(fs.readFileSync('src/tabular/onnx/onnx.proto','utf8')).root.toJSON(),null,2))"
// and paste the result below (quotes and layout are free).

// Typed loosely: protobufjs's INamespace typing does not know the `edition` key that its own
// toJSON writes (proto.ts casts it when loading).
export const ONNX_SCHEMA = {
  nested: {
    onnx: {
      nested: {
        AttributeProto: {
          edition: 'proto2',
          fields: {
            name: { type: 'string', id: 1 },
            refAttrName: { type: 'string', id: 21 },
            docString: { type: 'string', id: 13 },
            type: { type: 'AttributeType', id: 20 },
            f: { type: 'float', id: 2 },
            i: { type: 'int64', id: 3 },
            s: { type: 'bytes', id: 4 },
            t: { type: 'TensorProto', id: 5 },
            g: { type: 'GraphProto', id: 6 },
            sparseTensor: { type: 'SparseTensorProto', id: 22 },
            tp: { type: 'TypeProto', id: 14 },
            floats: { rule: 'repeated', type: 'float', id: 7 },
            ints: { rule: 'repeated', type: 'int64', id: 8 },
            strings: { rule: 'repeated', type: 'bytes', id: 9 },
            tensors: { rule: 'repeated', type: 'TensorProto', id: 10 },
            graphs: { rule: 'repeated', type: 'GraphProto', id: 11 },
            sparseTensors: { rule: 'repeated', type: 'SparseTensorProto', id: 23 },
            typeProtos: { rule: 'repeated', type: 'TypeProto', id: 15 }
          },
          nested: {
            AttributeType: {
              values: {
                UNDEFINED: 0,
                FLOAT: 1,
                INT: 2,
                STRING: 3,
                TENSOR: 4,
                GRAPH: 5,
                FLOATS: 6,
                INTS: 7,
                STRINGS: 8,
                TENSORS: 9,
                GRAPHS: 10,
                SPARSE_TENSOR: 11,
                SPARSE_TENSORS: 12,
                TYPE_PROTO: 13,
                TYPE_PROTOS: 14
              }
            }
          }
        },
        ValueInfoProto: {
          edition: 'proto2',
          fields: {
            name: { type: 'string', id: 1 },
            type: { type: 'TypeProto', id: 2 },
            docString: { type: 'string', id: 3 },
            metadataProps: { rule: 'repeated', type: 'StringStringEntryProto', id: 4 }
          }
        },
        NodeProto: {
          edition: 'proto2',
          fields: {
            input: { rule: 'repeated', type: 'string', id: 1 },
            output: { rule: 'repeated', type: 'string', id: 2 },
            name: { type: 'string', id: 3 },
            opType: { type: 'string', id: 4 },
            domain: { type: 'string', id: 7 },
            overload: { type: 'string', id: 8 },
            attribute: { rule: 'repeated', type: 'AttributeProto', id: 5 },
            docString: { type: 'string', id: 6 },
            metadataProps: { rule: 'repeated', type: 'StringStringEntryProto', id: 9 }
          }
        },
        ModelProto: {
          edition: 'proto2',
          fields: {
            irVersion: { type: 'int64', id: 1 },
            opsetImport: { rule: 'repeated', type: 'OperatorSetIdProto', id: 8 },
            producerName: { type: 'string', id: 2 },
            producerVersion: { type: 'string', id: 3 },
            domain: { type: 'string', id: 4 },
            modelVersion: { type: 'int64', id: 5 },
            docString: { type: 'string', id: 6 },
            graph: { type: 'GraphProto', id: 7 },
            metadataProps: { rule: 'repeated', type: 'StringStringEntryProto', id: 14 },
            functions: { rule: 'repeated', type: 'FunctionProto', id: 25 }
          }
        },
        StringStringEntryProto: {
          edition: 'proto2',
          fields: {
            key: { type: 'string', id: 1 },
            value: { type: 'string', id: 2 }
          }
        },
        GraphProto: {
          edition: 'proto2',
          fields: {
            node: { rule: 'repeated', type: 'NodeProto', id: 1 },
            name: { type: 'string', id: 2 },
            initializer: { rule: 'repeated', type: 'TensorProto', id: 5 },
            sparseInitializer: { rule: 'repeated', type: 'SparseTensorProto', id: 15 },
            docString: { type: 'string', id: 10 },
            input: { rule: 'repeated', type: 'ValueInfoProto', id: 11 },
            output: { rule: 'repeated', type: 'ValueInfoProto', id: 12 },
            valueInfo: { rule: 'repeated', type: 'ValueInfoProto', id: 13 },
            metadataProps: { rule: 'repeated', type: 'StringStringEntryProto', id: 16 }
          }
        },
        TensorProto: {
          edition: 'proto2',
          fields: {
            dims: { rule: 'repeated', type: 'int64', id: 1 },
            dataType: { type: 'int32', id: 2 },
            segment: { type: 'Segment', id: 3 },
            floatData: { rule: 'repeated', type: 'float', id: 4, options: { packed: true } },
            int32Data: { rule: 'repeated', type: 'int32', id: 5, options: { packed: true } },
            stringData: { rule: 'repeated', type: 'bytes', id: 6 },
            int64Data: { rule: 'repeated', type: 'int64', id: 7, options: { packed: true } },
            name: { type: 'string', id: 8 },
            docString: { type: 'string', id: 12 },
            rawData: { type: 'bytes', id: 9 },
            externalData: { rule: 'repeated', type: 'StringStringEntryProto', id: 13 },
            dataLocation: { type: 'DataLocation', id: 14 },
            doubleData: { rule: 'repeated', type: 'double', id: 10, options: { packed: true } },
            uint64Data: { rule: 'repeated', type: 'uint64', id: 11, options: { packed: true } },
            metadataProps: { rule: 'repeated', type: 'StringStringEntryProto', id: 16 }
          },
          nested: {
            DataType: {
              values: {
                UNDEFINED: 0,
                FLOAT: 1,
                UINT8: 2,
                INT8: 3,
                UINT16: 4,
                INT16: 5,
                INT32: 6,
                INT64: 7,
                STRING: 8,
                BOOL: 9,
                FLOAT16: 10,
                DOUBLE: 11,
                UINT32: 12,
                UINT64: 13,
                COMPLEX64: 14,
                COMPLEX128: 15,
                BFLOAT16: 16,
                FLOAT8E4M3FN: 17,
                FLOAT8E4M3FNUZ: 18,
                FLOAT8E5M2: 19,
                FLOAT8E5M2FNUZ: 20,
                UINT4: 21,
                INT4: 22,
                FLOAT4E2M1: 23,
                FLOAT8E8M0: 24
              }
            },
            Segment: {
              fields: {
                begin: { type: 'int64', id: 1 },
                end: { type: 'int64', id: 2 }
              }
            },
            DataLocation: {
              values: {
                DEFAULT: 0,
                EXTERNAL: 1
              }
            }
          }
        },
        SparseTensorProto: {
          edition: 'proto2',
          fields: {
            values: { type: 'TensorProto', id: 1 },
            indices: { type: 'TensorProto', id: 2 },
            dims: { rule: 'repeated', type: 'int64', id: 3 }
          }
        },
        TensorShapeProto: {
          edition: 'proto2',
          fields: {
            dim: { rule: 'repeated', type: 'Dimension', id: 1 }
          },
          nested: {
            Dimension: {
              oneofs: {
                value: {
                  oneof: ['dimValue', 'dimParam']
                }
              },
              fields: {
                dimValue: { type: 'int64', id: 1 },
                dimParam: { type: 'string', id: 2 },
                denotation: { type: 'string', id: 3 }
              }
            }
          }
        },
        TypeProto: {
          edition: 'proto2',
          oneofs: {
            value: {
              oneof: ['tensorType', 'sequenceType', 'mapType', 'optionalType', 'sparseTensorType', 'opaqueType']
            }
          },
          fields: {
            tensorType: { type: 'Tensor', id: 1 },
            sequenceType: { type: 'Sequence', id: 4 },
            mapType: { type: 'Map', id: 5 },
            optionalType: { type: 'Optional', id: 9 },
            sparseTensorType: { type: 'SparseTensor', id: 8 },
            opaqueType: { type: 'Opaque', id: 7 },
            denotation: { type: 'string', id: 6 }
          },
          nested: {
            Tensor: {
              fields: {
                elemType: { type: 'int32', id: 1 },
                shape: { type: 'TensorShapeProto', id: 2 }
              }
            },
            Sequence: {
              fields: {
                elemType: { type: 'TypeProto', id: 1 }
              }
            },
            Map: {
              fields: {
                keyType: { type: 'int32', id: 1 },
                valueType: { type: 'TypeProto', id: 2 }
              }
            },
            Optional: {
              fields: {
                elemType: { type: 'TypeProto', id: 1 }
              }
            },
            SparseTensor: {
              fields: {
                elemType: { type: 'int32', id: 1 },
                shape: { type: 'TensorShapeProto', id: 2 }
              }
            },
            Opaque: {
              fields: {
                domain: { type: 'string', id: 1 },
                name: { type: 'string', id: 2 }
              }
            }
          }
        },
        OperatorSetIdProto: {
          edition: 'proto2',
          fields: {
            domain: { type: 'string', id: 1 },
            version: { type: 'int64', id: 2 }
          }
        },
        FunctionProto: {
          edition: 'proto2',
          fields: {
            name: { type: 'string', id: 1 },
            input: { rule: 'repeated', type: 'string', id: 4 },
            output: { rule: 'repeated', type: 'string', id: 5 },
            attribute: { rule: 'repeated', type: 'string', id: 6 },
            node: { rule: 'repeated', type: 'NodeProto', id: 7 },
            docString: { type: 'string', id: 8 },
            opsetImport: { rule: 'repeated', type: 'OperatorSetIdProto', id: 9 },
            domain: { type: 'string', id: 10 },
            overload: { type: 'string', id: 13 }
          }
        }
      }
    }
  }
};
