// A reduction whose result keeps the reduced dimension: rejected by ReduceOp.verify_ (the result type is the one the op infers), as one line error: file:line:col: ...
builtin.module {
  cftensor.rule "t" "Affine" {
    %c = cftensor.input "c" : !cftensor.t<R, [batch, curr, poly], [1, 1, 1]>
    %r = cftensor.reduce %c[1] kind "sum" : (!cftensor.t<R, [batch, curr, poly], [1, 1, 1]>) -> !cftensor.t<R, [batch, curr], [1, 1]>
    cftensor.return %r : !cftensor.t<R, [batch, curr], [1, 1]>
  }
}

// RUN: cd %S && not cf-opt reduce_type.mlir 2> %t.err
// RUN: filecheck %s --input-file %t.err
// CHECK-NOT: Traceback
// CHECK: {{^}}error: reduce_type.mlir:5:5: 'cftensor.reduce' op gives <R, [batch, poly], [1, 1]> from its operands, not <R, [batch, curr], [1, 1]>{{$}}
// CHECK-NOT: {{.}}
