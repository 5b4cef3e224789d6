// What the CPU target cannot generate is an error at the op, never a crash.
// RUN: pcc-translate --pcc-to-cpp --split-input-file --verify-diagnostics %s

func.func @main(%x: tensor<4x8xf64>, %w: tensor<8x6xf64>) -> tensor<4x6xf64> {
  // expected-error @+1 {{code generation does not support 'pcc.matmul' on 'f64' (f32 only)}}
  %y = pcc.matmul %x, %w : (tensor<4x8xf64>, tensor<8x6xf64>) -> tensor<4x6xf64>
  return %y : tensor<4x6xf64>
}

// -----

// An input's element type is checked where the input is declared.
// expected-error @+1 {{code generation does not support element type 'f8E4M3FN'}}
func.func @main(%x: tensor<4xf8E4M3FN>) -> tensor<4xf8E4M3FN> {
  %y = pcc.neg %x : tensor<4xf8E4M3FN>
  return %y : tensor<4xf8E4M3FN>
}

// -----

// expected-error @+1 {{module has no func.func @main}}
module {
  func.func @other() {
    return
  }
}
