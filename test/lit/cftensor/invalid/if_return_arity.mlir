// A cftensor.if region that returns fewer values than the if has results: rejected by IfOp.verify_, as one line error: file:line:col: ...
builtin.module {
  cftensor.rule "t" "Relu" {
    %x = cftensor.input "x" : !cftensor.t<R, [batch, curr], [1, 1]>
    %c = cftensor.input "c" : !cftensor.t<B, [1, 1], [batch, curr]>
    %y = cftensor.if %c : (!cftensor.t<B, [1, 1], [batch, curr]>) -> !cftensor.t<R, [batch, curr], [1, 1]> then {
      cftensor.return %x : !cftensor.t<R, [batch, curr], [1, 1]>
    } else {
      cftensor.return
    }
    cftensor.return %y : !cftensor.t<R, [batch, curr], [1, 1]>
  }
}

// RUN: cd %S && not cf-opt if_return_arity.mlir 2> %t.err
// RUN: filecheck %s --input-file %t.err
// CHECK-NOT: Traceback
// CHECK: {{^}}error: if_return_arity.mlir:6:5: 'cftensor.if' op each region ends in cftensor.return with one value per result{{$}}
// CHECK-NOT: {{.}}
