//===- PCCAttrs.td - pcc dialect attributes ----------------*- tablegen -*-===//

#ifndef PCC_DIALECT_PCC_IR_PCCATTRS_TD
#define PCC_DIALECT_PCC_IR_PCCATTRS_TD

include "pcc/Dialect/PCC/IR/PCCDialect.td"
include "mlir/IR/AttrTypeBase.td"

class PCC_Attr<string name, string attrMnemonic, list<Trait> traits = []>
    : AttrDef<PCC_Dialect, name, traits> {
  let mnemonic = attrMnemonic;
}

def PCC_ExternalDataAttr : PCC_Attr<"ExternalData", "external"> {
  let summary = "Location of a weight stored outside the ONNX model file";
  let description = [{
    Where the bytes of an ONNX initializer with `data_location = EXTERNAL`
    live: a file path relative to the model's directory, a byte offset and a
    byte length. The file need not exist to import or plan a model; only code
    generation reads it.

    Example: `#pcc.external<"weights.bin", offset = 0, length = 4096>`
  }];
  let parameters = (ins StringRefParameter<>:$location, "int64_t":$offset,
                        "int64_t":$length);
  let assemblyFormat = "`<` $location `,` `offset` `=` $offset `,` `length` `=` $length `>`";
}

#endif // PCC_DIALECT_PCC_IR_PCCATTRS_TD
