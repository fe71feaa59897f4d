builtin.module {
  cftensor.flow "forward" "t" ["l:R:lower", "u:R:upper"]
  cftensor.rule "t" "Relu" {
    cftensor.flow "forward" "t" ["l:R:lower", "u:R:upper"]
    cftensor.return
  }
}

// An op -t python cannot emit is reported at its source position (was: internal error: NotImplementedError).
// RUN: cd %S && not cf-opt emit_python_unsupported_op.mlir -t python 2> %t.err
// RUN: filecheck %s --input-file %t.err
// CHECK-NOT: Traceback
// CHECK: {{^}}error: emit_python_unsupported_op.mlir:4:5: no Python emission for 'cftensor.flow'{{$}}
// CHECK-NOT: {{.}}
