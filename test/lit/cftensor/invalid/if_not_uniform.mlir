// Cftensor.if on a condition that varies per neuron: rejected by IfOp.verify_, as one line error: file:line:col: ...
builtin.module {
  cftensor.rule "t" "Relu" {
    %x = cftensor.input "x" : !cftensor.t<R, [batch, curr], [1, 1]>
    %c = cftensor.input "c" : !cftensor.t<B, [batch, curr], [1, 1]>
    %y = cftensor.if %c : (!cftensor.t<B, [batch, curr], [1, 1]>) -> !cftensor.t<R, [batch, curr], [1, 1]> then {
      cftensor.return %x : !cftensor.t<R, [batch, curr], [1, 1]>
    } else {
      cftensor.return %x : !cftensor.t<R, [batch, curr], [1, 1]>
    }
    cftensor.return %y : !cftensor.t<R, [batch, curr], [1, 1]>
  }
}

// RUN: cd %S && not cf-opt if_not_uniform.mlir 2> %t.err
// RUN: filecheck %s --input-file %t.err
// CHECK-NOT: Traceback
// CHECK: {{^}}error: if_not_uniform.mlir:6:5: 'cftensor.if' op needs a uniform condition (all intrinsic sizes 1), got <B, [batch, curr], [1, 1]>{{$}}
// CHECK-NOT: {{.}}
