// Substitute with Real bounds instead of PolyExps: rejected by SubstituteOp.verify_, as one line error: file:line:col: ...
builtin.module {
  cftensor.rule "t" "Affine" {
    %c = cftensor.input "c" : !cftensor.t<R, [lay], [1] :: R, [batch, curr], [1, 1]>
    %l = cftensor.input "l" : !cftensor.t<R, [lay], [1] :: R, [batch, 1], [1, curr]>
    %r = cftensor.substitute %c, %l, %l[2] : (!cftensor.t<R, [lay], [1] :: R, [batch, curr], [1, 1]>, !cftensor.t<R, [lay], [1] :: R, [batch, 1], [1, curr]>, !cftensor.t<R, [lay], [1] :: R, [batch, 1], [1, curr]>) -> !cftensor.t<P, [batch, curr], [1, 1]>
    cftensor.return %r : !cftensor.t<P, [batch, curr], [1, 1]>
  }
}

// RUN: cd %S && not cf-opt substitute_not_poly.mlir 2> %t.err
// RUN: filecheck %s --input-file %t.err
// CHECK-NOT: Traceback
// CHECK: {{^}}error: substitute_not_poly.mlir:6:5: 'cftensor.substitute' op replaces summands by PolyExps and gives a PolyExp{{$}}
// CHECK-NOT: {{.}}
