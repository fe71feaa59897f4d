// A comparison whose result is typed R, not a truth value: rejected by BinaryOp.verify_ (the result type is the one the op infers), as one line error: file:line:col: ...
builtin.module {
  cftensor.rule "t" "Relu" {
    %x = cftensor.input "x" : !cftensor.t<R, [batch, curr], [1, 1]>
    %y = cftensor.binary "gt" %x, %x : (!cftensor.t<R, [batch, curr], [1, 1]>, !cftensor.t<R, [batch, curr], [1, 1]>) -> !cftensor.t<R, [batch, curr], [1, 1]>
    cftensor.return %y : !cftensor.t<R, [batch, curr], [1, 1]>
  }
}

// RUN: cd %S && not cf-opt binary_letter.mlir 2> %t.err
// RUN: filecheck %s --input-file %t.err
// CHECK-NOT: Traceback
// CHECK: {{^}}error: binary_letter.mlir:5:5: 'cftensor.binary' op gives <B, [batch, curr], [1, 1]> from its operands, not <R, [batch, curr], [1, 1]>{{$}}
// CHECK-NOT: {{.}}
