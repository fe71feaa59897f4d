// An Int plus a Float typed I: rejected by BinaryOp.verify_ (the result type is the one the op infers), as one line error: file:line:col: ...
builtin.module {
  cftensor.rule "t" "Relu" {
    %x = cftensor.input "x" : !cftensor.t<R, [batch, curr], [1, 1]>
    %i = cftensor.input "i" : !cftensor.t<I, [batch, curr], [1, 1]>
    %y = cftensor.binary "add" %i, %x : (!cftensor.t<I, [batch, curr], [1, 1]>, !cftensor.t<R, [batch, curr], [1, 1]>) -> !cftensor.t<I, [batch, curr], [1, 1]>
    cftensor.return %y : !cftensor.t<I, [batch, curr], [1, 1]>
  }
}

// RUN: cd %S && not cf-opt binary_arith_letter.mlir 2> %t.err
// RUN: filecheck %s --input-file %t.err
// CHECK-NOT: Traceback
// CHECK: {{^}}error: binary_arith_letter.mlir:6:5: 'cftensor.binary' op gives <R, [batch, curr], [1, 1]> from its operands, not <I, [batch, curr], [1, 1]>{{$}}
// CHECK-NOT: {{.}}
