builtin.module {
  cf.func @h(%x: !cf.float) -> !cf.float {
    cf.yield %x : !cf.float
  }
  cf.func @f(%e: !cf.polyexp) -> !cf.float {
    %0 = cf.func_ref @h : !cf.func<(!cf.float) -> !cf.float>
    %1 = cf.map %e, %0 : (!cf.polyexp, !cf.func<(!cf.float) -> !cf.float>) -> !cf.float
    cf.yield %1 : !cf.float
  }
}

// RUN: cd %S && not cf-opt verify_map_function_type.mlir 2> %t.err
// RUN: filecheck %s --input-file %t.err
// CHECK-NOT: Traceback
// CHECK: {{^}}error: verify_map_function_type.mlir:7:5: 'cf.map' op map over a PolyExp needs a function (Neuron, Float) -> T, got (Float) -> Float{{$}}
// CHECK-NOT: {{.}}
