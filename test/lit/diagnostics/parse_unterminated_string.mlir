builtin.module {
  cf.func @priority(%n: !cf.neuron) -> !cf.int {
    %0 = cf.access %n["layer ] : (!cf.neuron) -> !cf.int // a long tail used to make the xDSL 0.74 lexer backtrack exponentially
    cf.yield %0 : !cf.int
  }
}

// Regression: an unterminated string literal must fail fast (cfmlir.frontend.LocatingParser).
// RUN: cd %S && not cf-opt parse_unterminated_string.mlir 2> %t.err
// RUN: filecheck %s --input-file %t.err
// CHECK-NOT: Traceback
// CHECK: {{^}}error: parse_unterminated_string.mlir:3:23: End of file reached before closing string literal.{{$}}
// CHECK-NOT: {{.}}
