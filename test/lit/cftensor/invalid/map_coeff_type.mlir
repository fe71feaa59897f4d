// The coefficients of a map over a PolyExp typed without the map's stack element: rejected by MapCoeffOp.verify_ (the result type is the one the op infers), as one line error: file:line:col: ...
builtin.module {
  cftensor.rule "t" "Affine" {
    %e = cftensor.input "e" : !cftensor.t<P, [batch, curr], [1, 1]>
    %c = cftensor.map_coeff %e : (!cftensor.t<P, [batch, curr], [1, 1]>) -> !cftensor.t<R, [batch, curr, poly], [1, 1, 1]>
    cftensor.return %c : !cftensor.t<R, [batch, curr, poly], [1, 1, 1]>
  }
}

// RUN: cd %S && not cf-opt map_coeff_type.mlir 2> %t.err
// RUN: filecheck %s --input-file %t.err
// CHECK-NOT: Traceback
// CHECK: {{^}}error: map_coeff_type.mlir:5:5: 'cftensor.map_coeff' op gives <R, [poly], [1] :: R, [batch, curr], [1, 1]> from its operands, not <R, [batch, curr, poly], [1, 1, 1]>{{$}}
// CHECK-NOT: {{.}}
