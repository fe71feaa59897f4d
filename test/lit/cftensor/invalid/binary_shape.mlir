// Binary operands of different intrinsic shapes (not aligned): rejected by BinaryOp.verify_, as one line error: file:line:col: ...
builtin.module {
  cftensor.rule "t" "Affine" {
    %x = cftensor.input "x" : !cftensor.t<R, [batch, curr], [1, 1]>
    %w = cftensor.input "w" : !cftensor.t<R, [1, curr], [batch, 1]>
    %y = cftensor.binary "add" %x, %w : (!cftensor.t<R, [batch, curr], [1, 1]>, !cftensor.t<R, [1, curr], [batch, 1]>) -> !cftensor.t<R, [batch, curr], [1, 1]>
    cftensor.return %y : !cftensor.t<R, [batch, curr], [1, 1]>
  }
}

// RUN: cd %S && not cf-opt binary_shape.mlir 2> %t.err
// RUN: filecheck %s --input-file %t.err
// CHECK-NOT: Traceback
// CHECK: {{^}}error: binary_shape.mlir:6:5: 'cftensor.binary' op needs operands and result of one intrinsic shape (align them first){{$}}
// CHECK-NOT: {{.}}
