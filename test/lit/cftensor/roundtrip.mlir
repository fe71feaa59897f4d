// Round trip of the cftensor dialect: every cftensor op and the !cftensor.t type, as cf-opt prints
// them.  The rules are real compiler output (cf-opt -p shape-analysis, or the default pipeline
// shape-analysis,fold-parts,fold-constants,cse,uniform-branch,domain-rewrites,cse,cftensor-licm,dce):
//   deepz "Neuron_add" (shape-analysis: map_noise, sym parts, ternary, reduce),
//   zid "Relu" (pipeline: if, sym, noise_to_sym, neuron_to_poly, clamp),
//   ibp "Affine" (pipeline: interval_inner, dot, map_neuron/map_coeff),
//   test/lit/compiler/running_example.cf "Affine" (pipeline: inner),
//   test/lit/compiler/layer_traverse.cf "Affine" (pipeline: layer_traverse, while, any, merge_top,
//   masked_reduce, split_inner, substitute),
//   a rule returning constants as PolyExp/SymExp members (shape-analysis: const_to_poly, const_to_sym);
// the last rule is hand-written: no pass emits cftensor.remove_dim, and clamp with both bounds or
// with max only; reduce and masked_reduce by max, and a !cftensor.t whose sizes are products and
// loop symbols, with a const element below the top.
// The input is printed back unchanged (diff against the file without its comments and blank
// lines: cf-opt ends its output with an empty line), printing is idempotent, and the generic form
// parses back to the same module.
// RUN: cf-opt %s > %t.first.mlir
// RUN: grep -v -e '^//' -e '^$' %s > %t.input.mlir && grep -v -e '^$' %t.first.mlir > %t.printed.mlir && diff %t.input.mlir %t.printed.mlir
// RUN: cf-opt %t.first.mlir > %t.second.mlir && diff %t.first.mlir %t.second.mlir
// RUN: cf-opt %s --print-op-generic > %t.generic.mlir && cf-opt %t.generic.mlir > %t.third.mlir && diff %t.first.mlir %t.third.mlir
// RUN: cf-opt %t.generic.mlir --print-op-generic > %t.generic2.mlir && diff %t.generic.mlir %t.generic2.mlir
// RUN: filecheck %s --input-file %t.first.mlir
// RUN: filecheck %s --input-file %t.generic.mlir --check-prefix=GENERIC
builtin.module {
  cftensor.flow "forward" "deeppoly" ["l:R:lower", "u:R:upper", "L:P:lower", "U:P:upper"]
  cftensor.rule "deepz" "Neuron_add" {
    %0 = cftensor.input "curr" : !cftensor.t<N, [1, curr], [batch, 1]>
    %1 = cftensor.input "curr_list" : !cftensor.t<N, [1, 1, curr], [batch, curr, 1]>
    %2 = cftensor.input "prev" : !cftensor.t<N, [1, 1, 2], [batch, curr, 1]>
    %3 = cftensor.input "prev_0" : !cftensor.t<N, [1, curr], [batch, 1]>
    %4 = cftensor.input "prev_1" : !cftensor.t<N, [1, curr], [batch, 1]>
    %5 = cftensor.access "Z" %3 : (!cftensor.t<N, [1, curr], [batch, 1]>) -> !cftensor.t<S, [batch, curr], [1, 1]>
    %6 = cftensor.access "Z" %4 : (!cftensor.t<N, [1, curr], [batch, 1]>) -> !cftensor.t<S, [batch, curr], [1, 1]>
    %7 = cftensor.extract_sym_coeff %5 : (!cftensor.t<S, [batch, curr], [1, 1]>) -> !cftensor.t<R, [batch, curr, sym], [1, 1, 1]>
    %8 = cftensor.extract_sym_const %5 : (!cftensor.t<S, [batch, curr], [1, 1]>) -> !cftensor.t<R, [batch, curr], [1, 1]>
    %9 = cftensor.extract_sym_coeff %6 : (!cftensor.t<S, [batch, curr], [1, 1]>) -> !cftensor.t<R, [batch, curr, sym], [1, 1, 1]>
    %10 = cftensor.extract_sym_const %6 : (!cftensor.t<S, [batch, curr], [1, 1]>) -> !cftensor.t<R, [batch, curr], [1, 1]>
    %11 = cftensor.binary "add" %7, %9 : (!cftensor.t<R, [batch, curr, sym], [1, 1, 1]>, !cftensor.t<R, [batch, curr, sym], [1, 1, 1]>) -> !cftensor.t<R, [batch, curr, sym], [1, 1, 1]>
    %12 = cftensor.binary "add" %8, %10 : (!cftensor.t<R, [batch, curr], [1, 1]>, !cftensor.t<R, [batch, curr], [1, 1]>) -> !cftensor.t<R, [batch, curr], [1, 1]>
    %13 = cftensor.combine_sym %11, %12 : (!cftensor.t<R, [batch, curr, sym], [1, 1, 1]>, !cftensor.t<R, [batch, curr], [1, 1]>) -> !cftensor.t<S, [batch, curr], [1, 1]>
    %14 = cftensor.map_noise %13 : (!cftensor.t<S, [batch, curr], [1, 1]>) -> !cftensor.t<E, [sym], [1] :: E, [1, 1], [batch, curr]>
    %15 = cftensor.map_coeff %13 : (!cftensor.t<S, [batch, curr], [1, 1]>) -> !cftensor.t<R, [sym], [1] :: R, [batch, curr], [1, 1]>
    %16 = cftensor.extract_sym_const %13 : (!cftensor.t<S, [batch, curr], [1, 1]>) -> !cftensor.t<R, [batch, curr], [1, 1]>
    %17 = cftensor.const(0.000000e+00 : f64) : !cftensor.t<const R, [1], [1]>
    %18 = cftensor.binary "gt" %15, %17 : (!cftensor.t<R, [sym], [1] :: R, [batch, curr], [1, 1]>, !cftensor.t<const R, [1], [1]>) -> !cftensor.t<B, [sym], [1] :: R, [batch, curr], [1, 1]>
    %19 = cftensor.const(0.000000e+00 : f64) : !cftensor.t<const R, [1], [1]>
    %20 = cftensor.const(1.000000e+00 : f64) : !cftensor.t<const R, [1], [1]>
    %21 = cftensor.binary "sub" %19, %20 : (!cftensor.t<const R, [1], [1]>, !cftensor.t<const R, [1], [1]>) -> !cftensor.t<const R, [1], [1]>
    %22 = cftensor.mult %15, %21 : (!cftensor.t<R, [sym], [1] :: R, [batch, curr], [1, 1]>, !cftensor.t<const R, [1], [1]>) -> !cftensor.t<R, [sym], [1] :: R, [batch, curr], [1, 1]>
    %23 = cftensor.const(1.000000e+00 : f64) : !cftensor.t<const R, [1], [1]>
    %24 = cftensor.mult %15, %23 : (!cftensor.t<R, [sym], [1] :: R, [batch, curr], [1, 1]>, !cftensor.t<const R, [1], [1]>) -> !cftensor.t<R, [sym], [1] :: R, [batch, curr], [1, 1]>
    %25 = cftensor.ternary %18, %22, %24 : (!cftensor.t<B, [sym], [1] :: R, [batch, curr], [1, 1]>, !cftensor.t<R, [sym], [1] :: R, [batch, curr], [1, 1]>, !cftensor.t<R, [sym], [1] :: R, [batch, curr], [1, 1]>) -> !cftensor.t<R, [sym], [1] :: R, [batch, curr], [1, 1]>
    %26 = cftensor.reduce %25[2] kind "sum" : (!cftensor.t<R, [sym], [1] :: R, [batch, curr], [1, 1]>) -> !cftensor.t<R, [batch, curr], [1, 1]>
    %27 = cftensor.binary "add" %26, %16 : (!cftensor.t<R, [batch, curr], [1, 1]>, !cftensor.t<R, [batch, curr], [1, 1]>) -> !cftensor.t<R, [batch, curr], [1, 1]>
    %28 = cftensor.access "Z" %3 : (!cftensor.t<N, [1, curr], [batch, 1]>) -> !cftensor.t<S, [batch, curr], [1, 1]>
    %29 = cftensor.access "Z" %4 : (!cftensor.t<N, [1, curr], [batch, 1]>) -> !cftensor.t<S, [batch, curr], [1, 1]>
    %30 = cftensor.extract_sym_coeff %28 : (!cftensor.t<S, [batch, curr], [1, 1]>) -> !cftensor.t<R, [batch, curr, sym], [1, 1, 1]>
    %31 = cftensor.extract_sym_const %28 : (!cftensor.t<S, [batch, curr], [1, 1]>) -> !cftensor.t<R, [batch, curr], [1, 1]>
    %32 = cftensor.extract_sym_coeff %29 : (!cftensor.t<S, [batch, curr], [1, 1]>) -> !cftensor.t<R, [batch, curr, sym], [1, 1, 1]>
    %33 = cftensor.extract_sym_const %29 : (!cftensor.t<S, [batch, curr], [1, 1]>) -> !cftensor.t<R, [batch, curr], [1, 1]>
    %34 = cftensor.binary "add" %30, %32 : (!cftensor.t<R, [batch, curr, sym], [1, 1, 1]>, !cftensor.t<R, [batch, curr, sym], [1, 1, 1]>) -> !cftensor.t<R, [batch, curr, sym], [1, 1, 1]>
    %35 = cftensor.binary "add" %31, %33 : (!cftensor.t<R, [batch, curr], [1, 1]>, !cftensor.t<R, [batch, curr], [1, 1]>) -> !cftensor.t<R, [batch, curr], [1, 1]>
    %36 = cftensor.combine_sym %34, %35 : (!cftensor.t<R, [batch, curr, sym], [1, 1, 1]>, !cftensor.t<R, [batch, curr], [1, 1]>) -> !cftensor.t<S, [batch, curr], [1, 1]>
    %37 = cftensor.map_noise %36 : (!cftensor.t<S, [batch, curr], [1, 1]>) -> !cftensor.t<E, [sym], [1] :: E, [1, 1], [batch, curr]>
    %38 = cftensor.map_coeff %36 : (!cftensor.t<S, [batch, curr], [1, 1]>) -> !cftensor.t<R, [sym], [1] :: R, [batch, curr], [1, 1]>
    %39 = cftensor.extract_sym_const %36 : (!cftensor.t<S, [batch, curr], [1, 1]>) -> !cftensor.t<R, [batch, curr], [1, 1]>
    %40 = cftensor.const(0.000000e+00 : f64) : !cftensor.t<const R, [1], [1]>
    %41 = cftensor.binary "gt" %38, %40 : (!cftensor.t<R, [sym], [1] :: R, [batch, curr], [1, 1]>, !cftensor.t<const R, [1], [1]>) -> !cftensor.t<B, [sym], [1] :: R, [batch, curr], [1, 1]>
    %42 = cftensor.const(1.000000e+00 : f64) : !cftensor.t<const R, [1], [1]>
    %43 = cftensor.mult %38, %42 : (!cftensor.t<R, [sym], [1] :: R, [batch, curr], [1, 1]>, !cftensor.t<const R, [1], [1]>) -> !cftensor.t<R, [sym], [1] :: R, [batch, curr], [1, 1]>
    %44 = cftensor.const(0.000000e+00 : f64) : !cftensor.t<const R, [1], [1]>
    %45 = cftensor.const(1.000000e+00 : f64) : !cftensor.t<const R, [1], [1]>
    %46 = cftensor.binary "sub" %44, %45 : (!cftensor.t<const R, [1], [1]>, !cftensor.t<const R, [1], [1]>) -> !cftensor.t<const R, [1], [1]>
    %47 = cftensor.mult %38, %46 : (!cftensor.t<R, [sym], [1] :: R, [batch, curr], [1, 1]>, !cftensor.t<const R, [1], [1]>) -> !cftensor.t<R, [sym], [1] :: R, [batch, curr], [1, 1]>
    %48 = cftensor.ternary %41, %43, %47 : (!cftensor.t<B, [sym], [1] :: R, [batch, curr], [1, 1]>, !cftensor.t<R, [sym], [1] :: R, [batch, curr], [1, 1]>, !cftensor.t<R, [sym], [1] :: R, [batch, curr], [1, 1]>) -> !cftensor.t<R, [sym], [1] :: R, [batch, curr], [1, 1]>
    %49 = cftensor.reduce %48[2] kind "sum" : (!cftensor.t<R, [sym], [1] :: R, [batch, curr], [1, 1]>) -> !cftensor.t<R, [batch, curr], [1, 1]>
    %50 = cftensor.binary "add" %49, %39 : (!cftensor.t<R, [batch, curr], [1, 1]>, !cftensor.t<R, [batch, curr], [1, 1]>) -> !cftensor.t<R, [batch, curr], [1, 1]>
    %51 = cftensor.access "Z" %3 : (!cftensor.t<N, [1, curr], [batch, 1]>) -> !cftensor.t<S, [batch, curr], [1, 1]>
    %52 = cftensor.access "Z" %4 : (!cftensor.t<N, [1, curr], [batch, 1]>) -> !cftensor.t<S, [batch, curr], [1, 1]>
    %53 = cftensor.extract_sym_coeff %51 : (!cftensor.t<S, [batch, curr], [1, 1]>) -> !cftensor.t<R, [batch, curr, sym], [1, 1, 1]>
    %54 = cftensor.extract_sym_const %51 : (!cftensor.t<S, [batch, curr], [1, 1]>) -> !cftensor.t<R, [batch, curr], [1, 1]>
    %55 = cftensor.extract_sym_coeff %52 : (!cftensor.t<S, [batch, curr], [1, 1]>) -> !cftensor.t<R, [batch, curr, sym], [1, 1, 1]>
    %56 = cftensor.extract_sym_const %52 : (!cftensor.t<S, [batch, curr], [1, 1]>) -> !cftensor.t<R, [batch, curr], [1, 1]>
    %57 = cftensor.binary "add" %53, %55 : (!cftensor.t<R, [batch, curr, sym], [1, 1, 1]>, !cftensor.t<R, [batch, curr, sym], [1, 1, 1]>) -> !cftensor.t<R, [batch, curr, sym], [1, 1, 1]>
    %58 = cftensor.binary "add" %54, %56 : (!cftensor.t<R, [batch, curr], [1, 1]>, !cftensor.t<R, [batch, curr], [1, 1]>) -> !cftensor.t<R, [batch, curr], [1, 1]>
    %59 = cftensor.combine_sym %57, %58 : (!cftensor.t<R, [batch, curr, sym], [1, 1, 1]>, !cftensor.t<R, [batch, curr], [1, 1]>) -> !cftensor.t<S, [batch, curr], [1, 1]>
    cftensor.return %27, %50, %59 : !cftensor.t<R, [batch, curr], [1, 1]>, !cftensor.t<R, [batch, curr], [1, 1]>, !cftensor.t<S, [batch, curr], [1, 1]>
  }
  cftensor.rule "zid" "Relu" {
    %60 = cftensor.input "curr" : !cftensor.t<N, [1, curr], [batch, 1]>
    %61 = cftensor.input "prev" : !cftensor.t<N, [1, curr], [batch, 1]>
    %62 = cftensor.access "last_layer" %60 : (!cftensor.t<N, [1, curr], [batch, 1]>) -> !cftensor.t<I, [1, 1], [batch, curr]>
    %63 = cftensor.const(1.000000e+00 : f64) : !cftensor.t<const I, [1], [1]>
    %64 = cftensor.binary "eq" %62, %63 : (!cftensor.t<I, [1, 1], [batch, curr]>, !cftensor.t<const I, [1], [1]>) -> !cftensor.t<B, [1, 1], [batch, curr]>
    %65 = cftensor.access "l" %61 : (!cftensor.t<N, [1, curr], [batch, 1]>) -> !cftensor.t<R, [batch, curr], [1, 1]>
    %66 = cftensor.const(0.000000e+00 : f64) : !cftensor.t<const R, [1], [1]>
    %67 = cftensor.clamp %65 min(0.000000e+00 : f64) : (!cftensor.t<R, [batch, curr], [1, 1]>) -> !cftensor.t<R, [batch, curr], [1, 1]>
    %68 = cftensor.access "u" %61 : (!cftensor.t<N, [1, curr], [batch, 1]>) -> !cftensor.t<R, [batch, curr], [1, 1]>
    %69 = cftensor.clamp %68 min(0.000000e+00 : f64) : (!cftensor.t<R, [batch, curr], [1, 1]>) -> !cftensor.t<R, [batch, curr], [1, 1]>
    %70 = cftensor.binary "add" %65, %68 : (!cftensor.t<R, [batch, curr], [1, 1]>, !cftensor.t<R, [batch, curr], [1, 1]>) -> !cftensor.t<R, [batch, curr], [1, 1]>
    %71 = cftensor.binary "gt" %70, %66 : (!cftensor.t<R, [batch, curr], [1, 1]>, !cftensor.t<const R, [1], [1]>) -> !cftensor.t<B, [batch, curr], [1, 1]>
    %72 = cftensor.neuron_to_poly %61 : (!cftensor.t<N, [1, curr], [batch, 1]>) -> !cftensor.t<P, [1, curr], [batch, 1]>
    %73 = cftensor.extract_poly_coeff %72 : (!cftensor.t<P, [1, curr], [batch, 1]>) -> !cftensor.t<R, [1, curr, poly], [batch, 1, 1]>
    %74 = cftensor.extract_poly_const %72 : (!cftensor.t<P, [1, curr], [batch, 1]>) -> !cftensor.t<R, [1, curr], [batch, 1]>
    %75 = cftensor.add_dim %71[2] : (!cftensor.t<B, [batch, curr], [1, 1]>) -> !cftensor.t<B, [batch, curr, 1], [1, 1, poly]>
    %76 = cftensor.repeat %75[2] size "poly" : (!cftensor.t<B, [batch, curr, 1], [1, 1, poly]>) -> !cftensor.t<B, [batch, curr, poly], [1, 1, 1]>
    %77 = cftensor.repeat %73[0] size "batch" : (!cftensor.t<R, [1, curr, poly], [batch, 1, 1]>) -> !cftensor.t<R, [batch, curr, poly], [1, 1, 1]>
    %78 = cftensor.mult %76, %77 : (!cftensor.t<B, [batch, curr, poly], [1, 1, 1]>, !cftensor.t<R, [batch, curr, poly], [1, 1, 1]>) -> !cftensor.t<R, [batch, curr, poly], [1, 1, 1]>
    %79 = cftensor.repeat %74[0] size "batch" : (!cftensor.t<R, [1, curr], [batch, 1]>) -> !cftensor.t<R, [batch, curr], [1, 1]>
    %80 = cftensor.mult %71, %79 : (!cftensor.t<B, [batch, curr], [1, 1]>, !cftensor.t<R, [batch, curr], [1, 1]>) -> !cftensor.t<R, [batch, curr], [1, 1]>
    %81 = cftensor.binary "ge" %65, %66 : (!cftensor.t<R, [batch, curr], [1, 1]>, !cftensor.t<const R, [1], [1]>) -> !cftensor.t<B, [batch, curr], [1, 1]>
    %82 = cftensor.binary "lt" %68, %66 : (!cftensor.t<R, [batch, curr], [1, 1]>, !cftensor.t<const R, [1], [1]>) -> !cftensor.t<B, [batch, curr], [1, 1]>
    %83 = cftensor.binary "sub" %68, %65 : (!cftensor.t<R, [batch, curr], [1, 1]>, !cftensor.t<R, [batch, curr], [1, 1]>) -> !cftensor.t<R, [batch, curr], [1, 1]>
    %84 = cftensor.binary "div" %68, %83 : (!cftensor.t<R, [batch, curr], [1, 1]>, !cftensor.t<R, [batch, curr], [1, 1]>) -> !cftensor.t<R, [batch, curr], [1, 1]>
    %85 = cftensor.add_dim %84[2] : (!cftensor.t<R, [batch, curr], [1, 1]>) -> !cftensor.t<R, [batch, curr, 1], [1, 1, poly]>
    %86 = cftensor.repeat %85[2] size "poly" : (!cftensor.t<R, [batch, curr, 1], [1, 1, poly]>) -> !cftensor.t<R, [batch, curr, poly], [1, 1, 1]>
    %87 = cftensor.mult %86, %77 : (!cftensor.t<R, [batch, curr, poly], [1, 1, 1]>, !cftensor.t<R, [batch, curr, poly], [1, 1, 1]>) -> !cftensor.t<R, [batch, curr, poly], [1, 1, 1]>
    %88 = cftensor.mult %84, %79 : (!cftensor.t<R, [batch, curr], [1, 1]>, !cftensor.t<R, [batch, curr], [1, 1]>) -> !cftensor.t<R, [batch, curr], [1, 1]>
    %89 = cftensor.mult %68, %65 : (!cftensor.t<R, [batch, curr], [1, 1]>, !cftensor.t<R, [batch, curr], [1, 1]>) -> !cftensor.t<R, [batch, curr], [1, 1]>
    %90 = cftensor.binary "div" %89, %83 : (!cftensor.t<R, [batch, curr], [1, 1]>, !cftensor.t<R, [batch, curr], [1, 1]>) -> !cftensor.t<R, [batch, curr], [1, 1]>
    %91 = cftensor.binary "sub" %88, %90 : (!cftensor.t<R, [batch, curr], [1, 1]>, !cftensor.t<R, [batch, curr], [1, 1]>) -> !cftensor.t<R, [batch, curr], [1, 1]>
    %92 = cftensor.add_dim %82[2] : (!cftensor.t<B, [batch, curr], [1, 1]>) -> !cftensor.t<B, [batch, curr, 1], [1, 1, poly]>
    %93 = cftensor.repeat %92[2] size "poly" : (!cftensor.t<B, [batch, curr, 1], [1, 1, poly]>) -> !cftensor.t<B, [batch, curr, poly], [1, 1, 1]>
    %94 = cftensor.ternary %93, %66, %87 : (!cftensor.t<B, [batch, curr, poly], [1, 1, 1]>, !cftensor.t<const R, [1], [1]>, !cftensor.t<R, [batch, curr, poly], [1, 1, 1]>) -> !cftensor.t<R, [batch, curr, poly], [1, 1, 1]>
    %95 = cftensor.ternary %82, %66, %91 : (!cftensor.t<B, [batch, curr], [1, 1]>, !cftensor.t<const R, [1], [1]>, !cftensor.t<R, [batch, curr], [1, 1]>) -> !cftensor.t<R, [batch, curr], [1, 1]>
    %96 = cftensor.add_dim %81[2] : (!cftensor.t<B, [batch, curr], [1, 1]>) -> !cftensor.t<B, [batch, curr, 1], [1, 1, poly]>
    %97 = cftensor.repeat %96[2] size "poly" : (!cftensor.t<B, [batch, curr, 1], [1, 1, poly]>) -> !cftensor.t<B, [batch, curr, poly], [1, 1, 1]>
    %98 = cftensor.ternary %97, %77, %94 : (!cftensor.t<B, [batch, curr, poly], [1, 1, 1]>, !cftensor.t<R, [batch, curr, poly], [1, 1, 1]>, !cftensor.t<R, [batch, curr, poly], [1, 1, 1]>) -> !cftensor.t<R, [batch, curr, poly], [1, 1, 1]>
    %99 = cftensor.ternary %81, %79, %95 : (!cftensor.t<B, [batch, curr], [1, 1]>, !cftensor.t<R, [batch, curr], [1, 1]>, !cftensor.t<R, [batch, curr], [1, 1]>) -> !cftensor.t<R, [batch, curr], [1, 1]>
    %100 = cftensor.binary "add" %67, %69 : (!cftensor.t<R, [batch, curr], [1, 1]>, !cftensor.t<R, [batch, curr], [1, 1]>) -> !cftensor.t<R, [batch, curr], [1, 1]>
    %101 = cftensor.const(2.000000e+00 : f64) : !cftensor.t<const R, [1], [1]>
    %102 = cftensor.binary "div" %100, %101 : (!cftensor.t<R, [batch, curr], [1, 1]>, !cftensor.t<const R, [1], [1]>) -> !cftensor.t<R, [batch, curr], [1, 1]>
    %103 = cftensor.binary "sub" %69, %67 : (!cftensor.t<R, [batch, curr], [1, 1]>, !cftensor.t<R, [batch, curr], [1, 1]>) -> !cftensor.t<R, [batch, curr], [1, 1]>
    %104 = cftensor.binary "div" %103, %101 : (!cftensor.t<R, [batch, curr], [1, 1]>, !cftensor.t<const R, [1], [1]>) -> !cftensor.t<R, [batch, curr], [1, 1]>
    %105 = cftensor.sym : !cftensor.t<E, [1, curr], [batch, 1]>
    %106 = cftensor.add_dim %104[2] : (!cftensor.t<R, [batch, curr], [1, 1]>) -> !cftensor.t<R, [batch, curr, 1], [1, 1, sym]>
    %107 = cftensor.repeat %106[2] size "sym" : (!cftensor.t<R, [batch, curr, 1], [1, 1, sym]>) -> !cftensor.t<R, [batch, curr, sym], [1, 1, 1]>
    %108 = cftensor.access "layer" %60 : (!cftensor.t<N, [1, curr], [batch, 1]>) -> !cftensor.t<I, [1, 1], [batch, curr]>
    %109 = cftensor.const(4.000000e+00 : f64) : !cftensor.t<const I, [1], [1]>
    %110 = cftensor.binary "le" %108, %109 : (!cftensor.t<I, [1, 1], [batch, curr]>, !cftensor.t<const I, [1], [1]>) -> !cftensor.t<B, [1, 1], [batch, curr]>
    %111 = cftensor.sym : !cftensor.t<E, [1, curr], [batch, 1]>
    %112 = cftensor.sym : !cftensor.t<E, [1, curr], [batch, 1]>
    %113 = cftensor.combine_poly %78, %80 : (!cftensor.t<R, [batch, curr, poly], [1, 1, 1]>, !cftensor.t<R, [batch, curr], [1, 1]>) -> !cftensor.t<P, [batch, curr], [1, 1]>
    %114 = cftensor.combine_poly %98, %99 : (!cftensor.t<R, [batch, curr, poly], [1, 1, 1]>, !cftensor.t<R, [batch, curr], [1, 1]>) -> !cftensor.t<P, [batch, curr], [1, 1]>
    %115, %116 = cftensor.if %64 : (!cftensor.t<B, [1, 1], [batch, curr]>) -> (!cftensor.t<R, [batch, curr, sym], [1, 1, 1]>, !cftensor.t<R, [batch, curr], [1, 1]>) then {
      %117 = cftensor.noise_to_sym %105 : (!cftensor.t<E, [1, curr], [batch, 1]>) -> !cftensor.t<S, [1, curr], [batch, 1]>
      %118 = cftensor.extract_sym_coeff %117 : (!cftensor.t<S, [1, curr], [batch, 1]>) -> !cftensor.t<R, [1, curr, sym], [batch, 1, 1]>
      %119 = cftensor.extract_sym_const %117 : (!cftensor.t<S, [1, curr], [batch, 1]>) -> !cftensor.t<R, [1, curr], [batch, 1]>
      %120 = cftensor.repeat %118[0] size "batch" : (!cftensor.t<R, [1, curr, sym], [batch, 1, 1]>) -> !cftensor.t<R, [batch, curr, sym], [1, 1, 1]>
      %121 = cftensor.mult %107, %120 : (!cftensor.t<R, [batch, curr, sym], [1, 1, 1]>, !cftensor.t<R, [batch, curr, sym], [1, 1, 1]>) -> !cftensor.t<R, [batch, curr, sym], [1, 1, 1]>
      %122 = cftensor.repeat %119[0] size "batch" : (!cftensor.t<R, [1, curr], [batch, 1]>) -> !cftensor.t<R, [batch, curr], [1, 1]>
      %123 = cftensor.mult %104, %122 : (!cftensor.t<R, [batch, curr], [1, 1]>, !cftensor.t<R, [batch, curr], [1, 1]>) -> !cftensor.t<R, [batch, curr], [1, 1]>
      %124 = cftensor.binary "add" %102, %123 : (!cftensor.t<R, [batch, curr], [1, 1]>, !cftensor.t<R, [batch, curr], [1, 1]>) -> !cftensor.t<R, [batch, curr], [1, 1]>
      cftensor.return %121, %124 : !cftensor.t<R, [batch, curr, sym], [1, 1, 1]>, !cftensor.t<R, [batch, curr], [1, 1]>
    } else {
      %125, %126 = cftensor.if %110 : (!cftensor.t<B, [1, 1], [batch, curr]>) -> (!cftensor.t<R, [batch, curr, sym], [1, 1, 1]>, !cftensor.t<R, [batch, curr], [1, 1]>) then {
        %127 = cftensor.access "Z" %61 : (!cftensor.t<N, [1, curr], [batch, 1]>) -> !cftensor.t<S, [batch, curr], [1, 1]>
        %128 = cftensor.binary "le" %68, %66 : (!cftensor.t<R, [batch, curr], [1, 1]>, !cftensor.t<const R, [1], [1]>) -> !cftensor.t<B, [batch, curr], [1, 1]>
        %129 = cftensor.extract_sym_coeff %127 : (!cftensor.t<S, [batch, curr], [1, 1]>) -> !cftensor.t<R, [batch, curr, sym], [1, 1, 1]>
        %130 = cftensor.extract_sym_const %127 : (!cftensor.t<S, [batch, curr], [1, 1]>) -> !cftensor.t<R, [batch, curr], [1, 1]>
        %131 = cftensor.add_dim %68[2] : (!cftensor.t<R, [batch, curr], [1, 1]>) -> !cftensor.t<R, [batch, curr, 1], [1, 1, sym]>
        %132 = cftensor.repeat %131[2] size "sym" : (!cftensor.t<R, [batch, curr, 1], [1, 1, sym]>) -> !cftensor.t<R, [batch, curr, sym], [1, 1, 1]>
        %133 = cftensor.mult %132, %129 : (!cftensor.t<R, [batch, curr, sym], [1, 1, 1]>, !cftensor.t<R, [batch, curr, sym], [1, 1, 1]>) -> !cftensor.t<R, [batch, curr, sym], [1, 1, 1]>
        %134 = cftensor.mult %68, %130 : (!cftensor.t<R, [batch, curr], [1, 1]>, !cftensor.t<R, [batch, curr], [1, 1]>) -> !cftensor.t<R, [batch, curr], [1, 1]>
        %135 = cftensor.add_dim %83[2] : (!cftensor.t<R, [batch, curr], [1, 1]>) -> !cftensor.t<R, [batch, curr, 1], [1, 1, sym]>
        %136 = cftensor.repeat %135[2] size "sym" : (!cftensor.t<R, [batch, curr, 1], [1, 1, sym]>) -> !cftensor.t<R, [batch, curr, sym], [1, 1, 1]>
        %137 = cftensor.binary "div" %133, %136 : (!cftensor.t<R, [batch, curr, sym], [1, 1, 1]>, !cftensor.t<R, [batch, curr, sym], [1, 1, 1]>) -> !cftensor.t<R, [batch, curr, sym], [1, 1, 1]>
        %138 = cftensor.binary "div" %134, %83 : (!cftensor.t<R, [batch, curr], [1, 1]>, !cftensor.t<R, [batch, curr], [1, 1]>) -> !cftensor.t<R, [batch, curr], [1, 1]>
        %139 = cftensor.noise_to_sym %111 : (!cftensor.t<E, [1, curr], [batch, 1]>) -> !cftensor.t<S, [1, curr], [batch, 1]>
        %140 = cftensor.extract_sym_coeff %139 : (!cftensor.t<S, [1, curr], [batch, 1]>) -> !cftensor.t<R, [1, curr, sym], [batch, 1, 1]>
        %141 = cftensor.extract_sym_const %139 : (!cftensor.t<S, [1, curr], [batch, 1]>) -> !cftensor.t<R, [1, curr], [batch, 1]>
        %142 = cftensor.binary "sub" %141, %63 : (!cftensor.t<R, [1, curr], [batch, 1]>, !cftensor.t<const I, [1], [1]>) -> !cftensor.t<R, [1, curr], [batch, 1]>
        %143 = cftensor.add_dim %89[2] : (!cftensor.t<R, [batch, curr], [1, 1]>) -> !cftensor.t<R, [batch, curr, 1], [1, 1, sym]>
        %144 = cftensor.repeat %143[2] size "sym" : (!cftensor.t<R, [batch, curr, 1], [1, 1, sym]>) -> !cftensor.t<R, [batch, curr, sym], [1, 1, 1]>
        %145 = cftensor.repeat %140[0] size "batch" : (!cftensor.t<R, [1, curr, sym], [batch, 1, 1]>) -> !cftensor.t<R, [batch, curr, sym], [1, 1, 1]>
        %146 = cftensor.mult %144, %145 : (!cftensor.t<R, [batch, curr, sym], [1, 1, 1]>, !cftensor.t<R, [batch, curr, sym], [1, 1, 1]>) -> !cftensor.t<R, [batch, curr, sym], [1, 1, 1]>
        %147 = cftensor.repeat %142[0] size "batch" : (!cftensor.t<R, [1, curr], [batch, 1]>) -> !cftensor.t<R, [batch, curr], [1, 1]>
        %148 = cftensor.mult %89, %147 : (!cftensor.t<R, [batch, curr], [1, 1]>, !cftensor.t<R, [batch, curr], [1, 1]>) -> !cftensor.t<R, [batch, curr], [1, 1]>
        %149 = cftensor.const(2.000000e+00 : f64) : !cftensor.t<const I, [1], [1]>
        %150 = cftensor.mult %149, %83 : (!cftensor.t<const I, [1], [1]>, !cftensor.t<R, [batch, curr], [1, 1]>) -> !cftensor.t<R, [batch, curr], [1, 1]>
        %151 = cftensor.add_dim %150[2] : (!cftensor.t<R, [batch, curr], [1, 1]>) -> !cftensor.t<R, [batch, curr, 1], [1, 1, sym]>
        %152 = cftensor.repeat %151[2] size "sym" : (!cftensor.t<R, [batch, curr, 1], [1, 1, sym]>) -> !cftensor.t<R, [batch, curr, sym], [1, 1, 1]>
        %153 = cftensor.binary "div" %146, %152 : (!cftensor.t<R, [batch, curr, sym], [1, 1, 1]>, !cftensor.t<R, [batch, curr, sym], [1, 1, 1]>) -> !cftensor.t<R, [batch, curr, sym], [1, 1, 1]>
        %154 = cftensor.binary "div" %148, %150 : (!cftensor.t<R, [batch, curr], [1, 1]>, !cftensor.t<R, [batch, curr], [1, 1]>) -> !cftensor.t<R, [batch, curr], [1, 1]>
        %155 = cftensor.binary "add" %137, %153 : (!cftensor.t<R, [batch, curr, sym], [1, 1, 1]>, !cftensor.t<R, [batch, curr, sym], [1, 1, 1]>) -> !cftensor.t<R, [batch, curr, sym], [1, 1, 1]>
        %156 = cftensor.binary "add" %138, %154 : (!cftensor.t<R, [batch, curr], [1, 1]>, !cftensor.t<R, [batch, curr], [1, 1]>) -> !cftensor.t<R, [batch, curr], [1, 1]>
        %157 = cftensor.add_dim %128[2] : (!cftensor.t<B, [batch, curr], [1, 1]>) -> !cftensor.t<B, [batch, curr, 1], [1, 1, sym]>
        %158 = cftensor.repeat %157[2] size "sym" : (!cftensor.t<B, [batch, curr, 1], [1, 1, sym]>) -> !cftensor.t<B, [batch, curr, sym], [1, 1, 1]>
        %159 = cftensor.ternary %158, %66, %155 : (!cftensor.t<B, [batch, curr, sym], [1, 1, 1]>, !cftensor.t<const R, [1], [1]>, !cftensor.t<R, [batch, curr, sym], [1, 1, 1]>) -> !cftensor.t<R, [batch, curr, sym], [1, 1, 1]>
        %160 = cftensor.ternary %128, %66, %156 : (!cftensor.t<B, [batch, curr], [1, 1]>, !cftensor.t<const R, [1], [1]>, !cftensor.t<R, [batch, curr], [1, 1]>) -> !cftensor.t<R, [batch, curr], [1, 1]>
        %161 = cftensor.add_dim %81[2] : (!cftensor.t<B, [batch, curr], [1, 1]>) -> !cftensor.t<B, [batch, curr, 1], [1, 1, sym]>
        %162 = cftensor.repeat %161[2] size "sym" : (!cftensor.t<B, [batch, curr, 1], [1, 1, sym]>) -> !cftensor.t<B, [batch, curr, sym], [1, 1, 1]>
        %163 = cftensor.ternary %162, %129, %159 : (!cftensor.t<B, [batch, curr, sym], [1, 1, 1]>, !cftensor.t<R, [batch, curr, sym], [1, 1, 1]>, !cftensor.t<R, [batch, curr, sym], [1, 1, 1]>) -> !cftensor.t<R, [batch, curr, sym], [1, 1, 1]>
        %164 = cftensor.ternary %81, %130, %160 : (!cftensor.t<B, [batch, curr], [1, 1]>, !cftensor.t<R, [batch, curr], [1, 1]>, !cftensor.t<R, [batch, curr], [1, 1]>) -> !cftensor.t<R, [batch, curr], [1, 1]>
        cftensor.return %163, %164 : !cftensor.t<R, [batch, curr, sym], [1, 1, 1]>, !cftensor.t<R, [batch, curr], [1, 1]>
      } else {
        %165 = cftensor.noise_to_sym %112 : (!cftensor.t<E, [1, curr], [batch, 1]>) -> !cftensor.t<S, [1, curr], [batch, 1]>
        %166 = cftensor.extract_sym_coeff %165 : (!cftensor.t<S, [1, curr], [batch, 1]>) -> !cftensor.t<R, [1, curr, sym], [batch, 1, 1]>
        %167 = cftensor.extract_sym_const %165 : (!cftensor.t<S, [1, curr], [batch, 1]>) -> !cftensor.t<R, [1, curr], [batch, 1]>
        %168 = cftensor.repeat %166[0] size "batch" : (!cftensor.t<R, [1, curr, sym], [batch, 1, 1]>) -> !cftensor.t<R, [batch, curr, sym], [1, 1, 1]>
        %169 = cftensor.mult %107, %168 : (!cftensor.t<R, [batch, curr, sym], [1, 1, 1]>, !cftensor.t<R, [batch, curr, sym], [1, 1, 1]>) -> !cftensor.t<R, [batch, curr, sym], [1, 1, 1]>
        %170 = cftensor.repeat %167[0] size "batch" : (!cftensor.t<R, [1, curr], [batch, 1]>) -> !cftensor.t<R, [batch, curr], [1, 1]>
        %171 = cftensor.mult %104, %170 : (!cftensor.t<R, [batch, curr], [1, 1]>, !cftensor.t<R, [batch, curr], [1, 1]>) -> !cftensor.t<R, [batch, curr], [1, 1]>
        %172 = cftensor.binary "add" %102, %171 : (!cftensor.t<R, [batch, curr], [1, 1]>, !cftensor.t<R, [batch, curr], [1, 1]>) -> !cftensor.t<R, [batch, curr], [1, 1]>
        cftensor.return %169, %172 : !cftensor.t<R, [batch, curr, sym], [1, 1, 1]>, !cftensor.t<R, [batch, curr], [1, 1]>
      }
      cftensor.return %125, %126 : !cftensor.t<R, [batch, curr, sym], [1, 1, 1]>, !cftensor.t<R, [batch, curr], [1, 1]>
    }
    %173 = cftensor.combine_sym %115, %116 : (!cftensor.t<R, [batch, curr, sym], [1, 1, 1]>, !cftensor.t<R, [batch, curr], [1, 1]>) -> !cftensor.t<S, [batch, curr], [1, 1]>
    cftensor.return %67, %69, %113, %114, %173 : !cftensor.t<R, [batch, curr], [1, 1]>, !cftensor.t<R, [batch, curr], [1, 1]>, !cftensor.t<P, [batch, curr], [1, 1]>, !cftensor.t<P, [batch, curr], [1, 1]>, !cftensor.t<S, [batch, curr], [1, 1]>
  }
  cftensor.rule "ibp" "Affine" {
    %174 = cftensor.input "prev" : !cftensor.t<N, [1, 1, prev], [batch, curr, 1]>
    %175 = cftensor.input "weight" : !cftensor.t<R, [1, curr, prev], [batch, 1, 1]>
    %176 = cftensor.repeat %174[1] size "curr" : (!cftensor.t<N, [1, 1, prev], [batch, curr, 1]>) -> !cftensor.t<N, [1, curr, prev], [batch, 1, 1]>
    %177 = cftensor.dot %176, %175 : (!cftensor.t<N, [1, curr, prev], [batch, 1, 1]>, !cftensor.t<R, [1, curr, prev], [batch, 1, 1]>) -> !cftensor.t<P, [1, curr], [batch, 1]>
    %178 = cftensor.input "bias" : !cftensor.t<R, [1, curr], [batch, 1]>
    %179 = cftensor.extract_poly_coeff %177 : (!cftensor.t<P, [1, curr], [batch, 1]>) -> !cftensor.t<R, [1, curr, poly], [batch, 1, 1]>
    %180 = cftensor.extract_poly_const %177 : (!cftensor.t<P, [1, curr], [batch, 1]>) -> !cftensor.t<R, [1, curr], [batch, 1]>
    %181 = cftensor.binary "add" %180, %178 : (!cftensor.t<R, [1, curr], [batch, 1]>, !cftensor.t<R, [1, curr], [batch, 1]>) -> !cftensor.t<R, [1, curr], [batch, 1]>
    %182 = cftensor.combine_poly %179, %181 : (!cftensor.t<R, [1, curr, poly], [batch, 1, 1]>, !cftensor.t<R, [1, curr], [batch, 1]>) -> !cftensor.t<P, [1, curr], [batch, 1]>
    %183 = cftensor.map_neuron %182 : (!cftensor.t<P, [1, curr], [batch, 1]>) -> !cftensor.t<N, [poly], [1] :: N, [1, 1], [batch, curr]>
    %184 = cftensor.map_coeff %182 : (!cftensor.t<P, [1, curr], [batch, 1]>) -> !cftensor.t<R, [poly], [1] :: R, [1, curr], [batch, 1]>
    %185 = cftensor.access "l" %183 : (!cftensor.t<N, [poly], [1] :: N, [1, 1], [batch, curr]>) -> !cftensor.t<R, [poly], [1] :: R, [batch, 1], [1, curr]>
    %186 = cftensor.access "u" %183 : (!cftensor.t<N, [poly], [1] :: N, [1, 1], [batch, curr]>) -> !cftensor.t<R, [poly], [1] :: R, [batch, 1], [1, curr]>
    %187, %188 = cftensor.interval_inner %184, %185, %186[2] : (!cftensor.t<R, [poly], [1] :: R, [1, curr], [batch, 1]>, !cftensor.t<R, [poly], [1] :: R, [batch, 1], [1, curr]>, !cftensor.t<R, [poly], [1] :: R, [batch, 1], [1, curr]>) -> (!cftensor.t<R, [batch, curr], [1, 1]>, !cftensor.t<R, [batch, curr], [1, 1]>)
    %189 = cftensor.repeat %181[0] size "batch" : (!cftensor.t<R, [1, curr], [batch, 1]>) -> !cftensor.t<R, [batch, curr], [1, 1]>
    %190 = cftensor.binary "add" %187, %189 : (!cftensor.t<R, [batch, curr], [1, 1]>, !cftensor.t<R, [batch, curr], [1, 1]>) -> !cftensor.t<R, [batch, curr], [1, 1]>
    %191 = cftensor.binary "add" %188, %189 : (!cftensor.t<R, [batch, curr], [1, 1]>, !cftensor.t<R, [batch, curr], [1, 1]>) -> !cftensor.t<R, [batch, curr], [1, 1]>
    cftensor.return %190, %191 : !cftensor.t<R, [batch, curr], [1, 1]>, !cftensor.t<R, [batch, curr], [1, 1]>
  }
  cftensor.rule "example" "Affine" {
    %192 = cftensor.input "prev" : !cftensor.t<N, [1, 1, prev], [batch, curr, 1]>
    %193 = cftensor.const(0.000000e+00 : f64) : !cftensor.t<const I, [1], [1]>
    %194 = cftensor.input "weight" : !cftensor.t<R, [1, curr, prev], [batch, 1, 1]>
    %195 = cftensor.repeat %192[1] size "curr" : (!cftensor.t<N, [1, 1, prev], [batch, curr, 1]>) -> !cftensor.t<N, [1, curr, prev], [batch, 1, 1]>
    %196 = cftensor.dot %195, %194 : (!cftensor.t<N, [1, curr, prev], [batch, 1, 1]>, !cftensor.t<R, [1, curr, prev], [batch, 1, 1]>) -> !cftensor.t<P, [1, curr], [batch, 1]>
    %197 = cftensor.map_neuron %196 : (!cftensor.t<P, [1, curr], [batch, 1]>) -> !cftensor.t<N, [poly], [1] :: N, [1, 1], [batch, curr]>
    %198 = cftensor.map_coeff %196 : (!cftensor.t<P, [1, curr], [batch, 1]>) -> !cftensor.t<R, [poly], [1] :: R, [1, curr], [batch, 1]>
    %199 = cftensor.extract_poly_const %196 : (!cftensor.t<P, [1, curr], [batch, 1]>) -> !cftensor.t<R, [1, curr], [batch, 1]>
    %200 = cftensor.access "L" %197 : (!cftensor.t<N, [poly], [1] :: N, [1, 1], [batch, curr]>) -> !cftensor.t<P, [poly], [1] :: P, [batch, 1], [1, curr]>
    %201 = cftensor.extract_poly_coeff %200 : (!cftensor.t<P, [poly], [1] :: P, [batch, 1], [1, curr]>) -> !cftensor.t<R, [poly, poly], [1, 1] :: P, [batch, 1], [1, curr]>
    %202 = cftensor.extract_poly_const %200 : (!cftensor.t<P, [poly], [1] :: P, [batch, 1], [1, curr]>) -> !cftensor.t<R, [poly], [1] :: P, [batch, 1], [1, curr]>
    %203 = cftensor.add_dim %198[3] : (!cftensor.t<R, [poly], [1] :: R, [1, curr], [batch, 1]>) -> !cftensor.t<R, [poly, 1], [1, poly] :: R, [1, curr], [batch, 1]>
    %204 = cftensor.inner %203, %201[2] : (!cftensor.t<R, [poly, 1], [1, poly] :: R, [1, curr], [batch, 1]>, !cftensor.t<R, [poly, poly], [1, 1] :: P, [batch, 1], [1, curr]>) -> !cftensor.t<R, [batch, curr, poly], [1, 1, 1]>
    %205 = cftensor.inner %198, %202[2] : (!cftensor.t<R, [poly], [1] :: R, [1, curr], [batch, 1]>, !cftensor.t<R, [poly], [1] :: P, [batch, 1], [1, curr]>) -> !cftensor.t<R, [batch, curr], [1, 1]>
    %206 = cftensor.repeat %199[0] size "batch" : (!cftensor.t<R, [1, curr], [batch, 1]>) -> !cftensor.t<R, [batch, curr], [1, 1]>
    %207 = cftensor.binary "add" %205, %206 : (!cftensor.t<R, [batch, curr], [1, 1]>, !cftensor.t<R, [batch, curr], [1, 1]>) -> !cftensor.t<R, [batch, curr], [1, 1]>
    %208 = cftensor.combine_poly %204, %207 : (!cftensor.t<R, [batch, curr, poly], [1, 1, 1]>, !cftensor.t<R, [batch, curr], [1, 1]>) -> !cftensor.t<P, [batch, curr], [1, 1]>
    %209 = cftensor.add_dim %193[1] : (!cftensor.t<const I, [1], [1]>) -> !cftensor.t<const I, [1, 1], [1, curr]>
    %210 = cftensor.repeat %209[0] size "batch" : (!cftensor.t<const I, [1, 1], [1, curr]>) -> !cftensor.t<const I, [batch, 1], [1, curr]>
    %211 = cftensor.repeat %210[1] size "curr" : (!cftensor.t<const I, [batch, 1], [1, curr]>) -> !cftensor.t<const I, [batch, curr], [1, 1]>
    cftensor.return %211, %211, %208, %208 : !cftensor.t<const I, [batch, curr], [1, 1]>, !cftensor.t<const I, [batch, curr], [1, 1]>, !cftensor.t<P, [batch, curr], [1, 1]>, !cftensor.t<P, [batch, curr], [1, 1]>
  }
  cftensor.rule "t" "Affine" {
    %212 = cftensor.input "curr" : !cftensor.t<N, [1, curr], [batch, 1]>
    %213 = cftensor.input "prev" : !cftensor.t<N, [1, 1, prev], [batch, curr, 1]>
    %214 = cftensor.const(0.000000e+00 : f64) : !cftensor.t<const I, [1], [1]>
    %215 = cftensor.input "weight" : !cftensor.t<R, [1, curr, prev], [batch, 1, 1]>
    %216 = cftensor.repeat %213[1] size "curr" : (!cftensor.t<N, [1, 1, prev], [batch, curr, 1]>) -> !cftensor.t<N, [1, curr, prev], [batch, 1, 1]>
    %217 = cftensor.dot %216, %215 : (!cftensor.t<N, [1, curr, prev], [batch, 1, 1]>, !cftensor.t<R, [1, curr, prev], [batch, 1, 1]>) -> !cftensor.t<P, [1, curr], [batch, 1]>
    %218 = cftensor.input "bias" : !cftensor.t<R, [1, curr], [batch, 1]>
    %219 = cftensor.extract_poly_coeff %217 : (!cftensor.t<P, [1, curr], [batch, 1]>) -> !cftensor.t<R, [1, curr, poly], [batch, 1, 1]>
    %220 = cftensor.extract_poly_const %217 : (!cftensor.t<P, [1, curr], [batch, 1]>) -> !cftensor.t<R, [1, curr], [batch, 1]>
    %221 = cftensor.binary "add" %220, %218 : (!cftensor.t<R, [1, curr], [batch, 1]>, !cftensor.t<R, [1, curr], [batch, 1]>) -> !cftensor.t<R, [1, curr], [batch, 1]>
    %222 = cftensor.combine_poly %219, %221 : (!cftensor.t<R, [1, curr, poly], [batch, 1, 1]>, !cftensor.t<R, [1, curr], [batch, 1]>) -> !cftensor.t<P, [1, curr], [batch, 1]>
    %223 = cftensor.access "layer" %212 : (!cftensor.t<N, [1, curr], [batch, 1]>) -> !cftensor.t<I, [1, 1], [batch, curr]>
    %224 = cftensor.repeat %222[0] size "batch" : (!cftensor.t<P, [1, curr], [batch, 1]>) -> !cftensor.t<P, [batch, curr], [1, 1]>
    %225 = cftensor.layer_traverse(%224) : (!cftensor.t<P, [batch, curr], [1, 1]>) -> !cftensor.t<P, [batch, curr], [1, 1]> priority {
    ^bb0(%226: !cftensor.t<N, [lay], [1] :: N, [1, 1], [batch, curr]>):
      %227 = cftensor.access "layer" %226 : (!cftensor.t<N, [lay], [1] :: N, [1, 1], [batch, curr]>) -> !cftensor.t<I, [1], [lay] :: N, [1, 1], [batch, curr]>
      %228 = cftensor.unary "neg" %227 : (!cftensor.t<I, [1], [lay] :: N, [1, 1], [batch, curr]>) -> !cftensor.t<I, [1], [lay] :: N, [1, 1], [batch, curr]>
      %229 = cftensor.const(2.000000e+00 : f64) : !cftensor.t<const I, [1], [1]>
      %230 = cftensor.binary "sub" %223, %229 : (!cftensor.t<I, [1, 1], [batch, curr]>, !cftensor.t<const I, [1], [1]>) -> !cftensor.t<I, [1, 1], [batch, curr]>
      %231 = cftensor.add_dim %230[2] : (!cftensor.t<I, [1, 1], [batch, curr]>) -> !cftensor.t<I, [1], [lay] :: I, [1, 1], [batch, curr]>
      %232 = cftensor.binary "lt" %227, %231 : (!cftensor.t<I, [1], [lay] :: N, [1, 1], [batch, curr]>, !cftensor.t<I, [1], [lay] :: I, [1, 1], [batch, curr]>) -> !cftensor.t<B, [1], [lay] :: N, [1, 1], [batch, curr]>
      cftensor.return %228, %232 : !cftensor.t<I, [1], [lay] :: N, [1, 1], [batch, curr]>, !cftensor.t<B, [1], [lay] :: N, [1, 1], [batch, curr]>
    } body {
    ^bb0(%233: !cftensor.t<N, [lay], [1] :: N, [1, 1], [batch, curr]>, %234: !cftensor.t<R, [lay], [1] :: R, [batch, curr], [1, 1]>):
      %235 = cftensor.access "L" %233 : (!cftensor.t<N, [lay], [1] :: N, [1, 1], [batch, curr]>) -> !cftensor.t<P, [lay], [1] :: P, [batch, 1], [1, curr]>
      %236 = cftensor.access "U" %233 : (!cftensor.t<N, [lay], [1] :: N, [1, 1], [batch, curr]>) -> !cftensor.t<P, [lay], [1] :: P, [batch, 1], [1, curr]>
      %237 = cftensor.substitute %234, %235, %236[2] : (!cftensor.t<R, [lay], [1] :: R, [batch, curr], [1, 1]>, !cftensor.t<P, [lay], [1] :: P, [batch, 1], [1, curr]>, !cftensor.t<P, [lay], [1] :: P, [batch, 1], [1, curr]>) -> !cftensor.t<P, [batch, curr], [1, 1]>
      cftensor.return %237 : !cftensor.t<P, [batch, curr], [1, 1]>
    }
    %238 = cftensor.while(%224) : (!cftensor.t<P, [batch, curr], [1, 1]>) -> !cftensor.t<P, [batch, curr], [1, 1]> before {
    ^bb0(%239: !cftensor.t<P, [batch, curr], [1, 1]>):
      %240 = cftensor.map_coeff %239 : (!cftensor.t<P, [batch, curr], [1, 1]>) -> !cftensor.t<R, [poly], [1] :: R, [batch, curr], [1, 1]>
      %241 = cftensor.any %240 : (!cftensor.t<R, [poly], [1] :: R, [batch, curr], [1, 1]>) -> !cftensor.t<B, [1], [1]>
      cftensor.return %241, %239 : !cftensor.t<B, [1], [1]>, !cftensor.t<P, [batch, curr], [1, 1]>
    } after {
    ^bb0(%242: !cftensor.t<P, [batch, curr], [1, 1]>):
      %243 = cftensor.map_neuron %242 : (!cftensor.t<P, [batch, curr], [1, 1]>) -> !cftensor.t<N, [poly], [1] :: N, [1, 1], [batch, curr]>
      %244 = cftensor.map_coeff %242 : (!cftensor.t<P, [batch, curr], [1, 1]>) -> !cftensor.t<R, [poly], [1] :: R, [batch, curr], [1, 1]>
      %245 = cftensor.extract_poly_const %242 : (!cftensor.t<P, [batch, curr], [1, 1]>) -> !cftensor.t<R, [batch, curr], [1, 1]>
      %246 = cftensor.access "l" %243 : (!cftensor.t<N, [poly], [1] :: N, [1, 1], [batch, curr]>) -> !cftensor.t<R, [poly], [1] :: R, [batch, 1], [1, curr]>
      %247 = cftensor.access "u" %243 : (!cftensor.t<N, [poly], [1] :: N, [1, 1], [batch, curr]>) -> !cftensor.t<R, [poly], [1] :: R, [batch, 1], [1, curr]>
      %248 = cftensor.binary "sub" %246, %247 : (!cftensor.t<R, [poly], [1] :: R, [batch, 1], [1, curr]>, !cftensor.t<R, [poly], [1] :: R, [batch, 1], [1, curr]>) -> !cftensor.t<R, [poly], [1] :: R, [batch, 1], [1, curr]>
      %249 = cftensor.repeat %248[1] size "curr" : (!cftensor.t<R, [poly], [1] :: R, [batch, 1], [1, curr]>) -> !cftensor.t<R, [poly], [1] :: R, [batch, curr], [1, 1]>
      %250 = cftensor.masked_reduce %244, %249[2] kind "min" : (!cftensor.t<R, [poly], [1] :: R, [batch, curr], [1, 1]>, !cftensor.t<R, [poly], [1] :: R, [batch, curr], [1, 1]>) -> !cftensor.t<R, [batch, curr], [1, 1]>
      %251 = cftensor.add_dim %250[2] : (!cftensor.t<R, [batch, curr], [1, 1]>) -> !cftensor.t<R, [1], [poly] :: R, [batch, curr], [1, 1]>
      %252 = cftensor.repeat %251[2] size "poly" : (!cftensor.t<R, [1], [poly] :: R, [batch, curr], [1, 1]>) -> !cftensor.t<R, [poly], [1] :: R, [batch, curr], [1, 1]>
      %253 = cftensor.binary "eq" %249, %252 : (!cftensor.t<R, [poly], [1] :: R, [batch, curr], [1, 1]>, !cftensor.t<R, [poly], [1] :: R, [batch, curr], [1, 1]>) -> !cftensor.t<B, [poly], [1] :: R, [batch, curr], [1, 1]>
      %254 = cftensor.unary "not" %253 : (!cftensor.t<B, [poly], [1] :: R, [batch, curr], [1, 1]>) -> !cftensor.t<B, [poly], [1] :: R, [batch, curr], [1, 1]>
      %255 = cftensor.mult %254, %244 : (!cftensor.t<B, [poly], [1] :: R, [batch, curr], [1, 1]>, !cftensor.t<R, [poly], [1] :: R, [batch, curr], [1, 1]>) -> !cftensor.t<R, [poly], [1] :: R, [batch, curr], [1, 1]>
      %256 = cftensor.merge_top %255 : (!cftensor.t<R, [poly], [1] :: R, [batch, curr], [1, 1]>) -> !cftensor.t<R, [batch, curr, poly], [1, 1, 1]>
      %257 = cftensor.mult %253, %244 : (!cftensor.t<B, [poly], [1] :: R, [batch, curr], [1, 1]>, !cftensor.t<R, [poly], [1] :: R, [batch, curr], [1, 1]>) -> !cftensor.t<R, [poly], [1] :: R, [batch, curr], [1, 1]>
      %258 = cftensor.access "L" %243 : (!cftensor.t<N, [poly], [1] :: N, [1, 1], [batch, curr]>) -> !cftensor.t<P, [poly], [1] :: P, [batch, 1], [1, curr]>
      %259 = cftensor.extract_poly_coeff %258 : (!cftensor.t<P, [poly], [1] :: P, [batch, 1], [1, curr]>) -> !cftensor.t<R, [poly, poly], [1, 1] :: P, [batch, 1], [1, curr]>
      %260 = cftensor.extract_poly_const %258 : (!cftensor.t<P, [poly], [1] :: P, [batch, 1], [1, curr]>) -> !cftensor.t<R, [poly], [1] :: P, [batch, 1], [1, curr]>
      %261 = cftensor.access "U" %243 : (!cftensor.t<N, [poly], [1] :: N, [1, 1], [batch, curr]>) -> !cftensor.t<P, [poly], [1] :: P, [batch, 1], [1, curr]>
      %262 = cftensor.extract_poly_coeff %261 : (!cftensor.t<P, [poly], [1] :: P, [batch, 1], [1, curr]>) -> !cftensor.t<R, [poly, poly], [1, 1] :: P, [batch, 1], [1, curr]>
      %263 = cftensor.extract_poly_const %261 : (!cftensor.t<P, [poly], [1] :: P, [batch, 1], [1, curr]>) -> !cftensor.t<R, [poly], [1] :: P, [batch, 1], [1, curr]>
      %264 = cftensor.add_dim %257[3] : (!cftensor.t<R, [poly], [1] :: R, [batch, curr], [1, 1]>) -> !cftensor.t<R, [poly, 1], [1, poly] :: R, [batch, curr], [1, 1]>
      %265 = cftensor.split_inner %264, %259, %262[2] : (!cftensor.t<R, [poly, 1], [1, poly] :: R, [batch, curr], [1, 1]>, !cftensor.t<R, [poly, poly], [1, 1] :: P, [batch, 1], [1, curr]>, !cftensor.t<R, [poly, poly], [1, 1] :: P, [batch, 1], [1, curr]>) -> !cftensor.t<R, [batch, curr, poly], [1, 1, 1]>
      %266 = cftensor.split_inner %257, %260, %263[2] : (!cftensor.t<R, [poly], [1] :: R, [batch, curr], [1, 1]>, !cftensor.t<R, [poly], [1] :: P, [batch, 1], [1, curr]>, !cftensor.t<R, [poly], [1] :: P, [batch, 1], [1, curr]>) -> !cftensor.t<R, [batch, curr], [1, 1]>
      %267 = cftensor.binary "add" %256, %265 : (!cftensor.t<R, [batch, curr, poly], [1, 1, 1]>, !cftensor.t<R, [batch, curr, poly], [1, 1, 1]>) -> !cftensor.t<R, [batch, curr, poly], [1, 1, 1]>
      %268 = cftensor.binary "add" %245, %266 : (!cftensor.t<R, [batch, curr], [1, 1]>, !cftensor.t<R, [batch, curr], [1, 1]>) -> !cftensor.t<R, [batch, curr], [1, 1]>
      %269 = cftensor.combine_poly %267, %268 : (!cftensor.t<R, [batch, curr, poly], [1, 1, 1]>, !cftensor.t<R, [batch, curr], [1, 1]>) -> !cftensor.t<P, [batch, curr], [1, 1]>
      cftensor.return %269 : !cftensor.t<P, [batch, curr], [1, 1]>
    }
    %270 = cftensor.add_dim %214[1] : (!cftensor.t<const I, [1], [1]>) -> !cftensor.t<const I, [1, 1], [1, curr]>
    %271 = cftensor.repeat %270[0] size "batch" : (!cftensor.t<const I, [1, 1], [1, curr]>) -> !cftensor.t<const I, [batch, 1], [1, curr]>
    %272 = cftensor.repeat %271[1] size "curr" : (!cftensor.t<const I, [batch, 1], [1, curr]>) -> !cftensor.t<const I, [batch, curr], [1, 1]>
    cftensor.return %272, %272, %225, %238 : !cftensor.t<const I, [batch, curr], [1, 1]>, !cftensor.t<const I, [batch, curr], [1, 1]>, !cftensor.t<P, [batch, curr], [1, 1]>, !cftensor.t<P, [batch, curr], [1, 1]>
  }
  cftensor.rule "t" "Relu" {
    %273 = cftensor.input "curr" : !cftensor.t<N, [1, curr], [batch, 1]>
    %274 = cftensor.input "curr_list" : !cftensor.t<N, [1, 1, curr], [batch, curr, 1]>
    %275 = cftensor.input "prev" : !cftensor.t<N, [1, curr], [batch, 1]>
    %276 = cftensor.const(0.000000e+00 : f64) : !cftensor.t<const I, [1], [1]>
    %277 = cftensor.const(1.000000e+00 : f64) : !cftensor.t<const I, [1], [1]>
    %278 = cftensor.const(5.000000e-01 : f64) : !cftensor.t<const R, [1], [1]>
    %279 = cftensor.const(2.000000e+00 : f64) : !cftensor.t<const R, [1], [1]>
    %280 = cftensor.add_dim %276[1] : (!cftensor.t<const I, [1], [1]>) -> !cftensor.t<const I, [1, 1], [1, curr]>
    %281 = cftensor.repeat %280[0] size "batch" : (!cftensor.t<const I, [1, 1], [1, curr]>) -> !cftensor.t<const I, [batch, 1], [1, curr]>
    %282 = cftensor.repeat %281[1] size "curr" : (!cftensor.t<const I, [batch, 1], [1, curr]>) -> !cftensor.t<const I, [batch, curr], [1, 1]>
    %283 = cftensor.add_dim %277[1] : (!cftensor.t<const I, [1], [1]>) -> !cftensor.t<const I, [1, 1], [1, curr]>
    %284 = cftensor.repeat %283[0] size "batch" : (!cftensor.t<const I, [1, 1], [1, curr]>) -> !cftensor.t<const I, [batch, 1], [1, curr]>
    %285 = cftensor.repeat %284[1] size "curr" : (!cftensor.t<const I, [batch, 1], [1, curr]>) -> !cftensor.t<const I, [batch, curr], [1, 1]>
    %286 = cftensor.const_to_poly %278 : (!cftensor.t<const R, [1], [1]>) -> !cftensor.t<const P, [1], [1]>
    %287 = cftensor.add_dim %286[1] : (!cftensor.t<const P, [1], [1]>) -> !cftensor.t<const P, [1, 1], [1, curr]>
    %288 = cftensor.repeat %287[0] size "batch" : (!cftensor.t<const P, [1, 1], [1, curr]>) -> !cftensor.t<const P, [batch, 1], [1, curr]>
    %289 = cftensor.repeat %288[1] size "curr" : (!cftensor.t<const P, [batch, 1], [1, curr]>) -> !cftensor.t<const P, [batch, curr], [1, 1]>
    %290 = cftensor.const_to_sym %279 : (!cftensor.t<const R, [1], [1]>) -> !cftensor.t<const S, [1], [1]>
    %291 = cftensor.add_dim %290[1] : (!cftensor.t<const S, [1], [1]>) -> !cftensor.t<const S, [1, 1], [1, curr]>
    %292 = cftensor.repeat %291[0] size "batch" : (!cftensor.t<const S, [1, 1], [1, curr]>) -> !cftensor.t<const S, [batch, 1], [1, curr]>
    %293 = cftensor.repeat %292[1] size "curr" : (!cftensor.t<const S, [batch, 1], [1, curr]>) -> !cftensor.t<const S, [batch, curr], [1, 1]>
    cftensor.return %282, %285, %289, %293 : !cftensor.t<const I, [batch, curr], [1, 1]>, !cftensor.t<const I, [batch, curr], [1, 1]>, !cftensor.t<const P, [batch, curr], [1, 1]>, !cftensor.t<const S, [batch, curr], [1, 1]>
  }
  cftensor.rule "t" "Flatten" {
    %294 = cftensor.input "x" : !cftensor.t<R, [batch, curr, 1], [1, 1, 1]>
    %295 = cftensor.remove_dim %294[2] : (!cftensor.t<R, [batch, curr, 1], [1, 1, 1]>) -> !cftensor.t<R, [batch, curr], [1, 1]>
    %296 = cftensor.clamp %295 min(-1.000000e+00 : f64) max(1.000000e+00 : f64) : (!cftensor.t<R, [batch, curr], [1, 1]>) -> !cftensor.t<R, [batch, curr], [1, 1]>
    %297 = cftensor.clamp %295 max(0.000000e+00 : f64) : (!cftensor.t<R, [batch, curr], [1, 1]>) -> !cftensor.t<R, [batch, curr], [1, 1]>
    %298 = cftensor.input "c" : !cftensor.t<R, [batch, curr, poly], [1, 1, 1]>
    %299 = cftensor.reduce %298[2] kind "max" : (!cftensor.t<R, [batch, curr, poly], [1, 1, 1]>) -> !cftensor.t<R, [batch, curr], [1, 1]>
    %300 = cftensor.masked_reduce %298, %298[2] kind "max" : (!cftensor.t<R, [batch, curr, poly], [1, 1, 1]>, !cftensor.t<R, [batch, curr, poly], [1, 1, 1]>) -> !cftensor.t<R, [batch, curr], [1, 1]>
    %301 = cftensor.input "s" : !cftensor.t<R, [s0], [1] :: const R, [2*batch, curr*poly], [1, lay]>
    cftensor.return %296, %297, %299, %300, %301 : !cftensor.t<R, [batch, curr], [1, 1]>, !cftensor.t<R, [batch, curr], [1, 1]>, !cftensor.t<R, [batch, curr], [1, 1]>, !cftensor.t<R, [batch, curr], [1, 1]>, !cftensor.t<R, [s0], [1] :: const R, [2*batch, curr*poly], [1, lay]>
  }
}

// The first use of each op kind, in its custom syntax:
// CHECK: builtin.module {
// CHECK: cftensor.flow "forward" "deeppoly" ["l:R:lower", "u:R:upper", "L:P:lower", "U:P:upper"]
// CHECK: cftensor.rule "deepz" "Neuron_add" {
// CHECK: %{{[0-9]+}} = cftensor.input "curr" : !cftensor.t<N, [1, curr], [batch, 1]>
// CHECK: %{{[0-9]+}} = cftensor.access "Z" %{{[0-9]+}} : (!cftensor.t<N, [1, curr], [batch, 1]>) -> !cftensor.t<S, [batch, curr], [1, 1]>
// CHECK: %{{[0-9]+}} = cftensor.extract_sym_coeff %{{[0-9]+}} : (!cftensor.t<S, [batch, curr], [1, 1]>) -> !cftensor.t<R, [batch, curr, sym], [1, 1, 1]>
// CHECK: %{{[0-9]+}} = cftensor.extract_sym_const %{{[0-9]+}} : (!cftensor.t<S, [batch, curr], [1, 1]>) -> !cftensor.t<R, [batch, curr], [1, 1]>
// CHECK: %{{[0-9]+}} = cftensor.binary "add" %{{[0-9]+}}, %{{[0-9]+}} : (!cftensor.t<R, [batch, curr, sym], [1, 1, 1]>, !cftensor.t<R, [batch, curr, sym], [1, 1, 1]>) -> !cftensor.t<R, [batch, curr, sym], [1, 1, 1]>
// CHECK: %{{[0-9]+}} = cftensor.combine_sym %{{[0-9]+}}, %{{[0-9]+}} : (!cftensor.t<R, [batch, curr, sym], [1, 1, 1]>, !cftensor.t<R, [batch, curr], [1, 1]>) -> !cftensor.t<S, [batch, curr], [1, 1]>
// CHECK: %{{[0-9]+}} = cftensor.map_noise %{{[0-9]+}} : (!cftensor.t<S, [batch, curr], [1, 1]>) -> !cftensor.t<E, [sym], [1] :: E, [1, 1], [batch, curr]>
// CHECK: %{{[0-9]+}} = cftensor.map_coeff %{{[0-9]+}} : (!cftensor.t<S, [batch, curr], [1, 1]>) -> !cftensor.t<R, [sym], [1] :: R, [batch, curr], [1, 1]>
// CHECK: %{{[0-9]+}} = cftensor.const(0.000000e+00 : f64) : !cftensor.t<const R, [1], [1]>
// CHECK: %{{[0-9]+}} = cftensor.mult %{{[0-9]+}}, %{{[0-9]+}} : (!cftensor.t<R, [sym], [1] :: R, [batch, curr], [1, 1]>, !cftensor.t<const R, [1], [1]>) -> !cftensor.t<R, [sym], [1] :: R, [batch, curr], [1, 1]>
// CHECK: %{{[0-9]+}} = cftensor.ternary %{{[0-9]+}}, %{{[0-9]+}}, %{{[0-9]+}} : (!cftensor.t<B, [sym], [1] :: R, [batch, curr], [1, 1]>, !cftensor.t<R, [sym], [1] :: R, [batch, curr], [1, 1]>, !cftensor.t<R, [sym], [1] :: R, [batch, curr], [1, 1]>) -> !cftensor.t<R, [sym], [1] :: R, [batch, curr], [1, 1]>
// CHECK: %{{[0-9]+}} = cftensor.reduce %{{[0-9]+}}[2] kind "sum" : (!cftensor.t<R, [sym], [1] :: R, [batch, curr], [1, 1]>) -> !cftensor.t<R, [batch, curr], [1, 1]>
// CHECK: cftensor.return %{{[0-9]+}}, %{{[0-9]+}}, %{{[0-9]+}} : !cftensor.t<R, [batch, curr], [1, 1]>, !cftensor.t<R, [batch, curr], [1, 1]>, !cftensor.t<S, [batch, curr], [1, 1]>
// CHECK: %{{[0-9]+}} = cftensor.clamp %{{[0-9]+}} min(0.000000e+00 : f64) : (!cftensor.t<R, [batch, curr], [1, 1]>) -> !cftensor.t<R, [batch, curr], [1, 1]>
// CHECK: %{{[0-9]+}} = cftensor.neuron_to_poly %{{[0-9]+}} : (!cftensor.t<N, [1, curr], [batch, 1]>) -> !cftensor.t<P, [1, curr], [batch, 1]>
// CHECK: %{{[0-9]+}} = cftensor.extract_poly_coeff %{{[0-9]+}} : (!cftensor.t<P, [1, curr], [batch, 1]>) -> !cftensor.t<R, [1, curr, poly], [batch, 1, 1]>
// CHECK: %{{[0-9]+}} = cftensor.extract_poly_const %{{[0-9]+}} : (!cftensor.t<P, [1, curr], [batch, 1]>) -> !cftensor.t<R, [1, curr], [batch, 1]>
// CHECK: %{{[0-9]+}} = cftensor.add_dim %{{[0-9]+}}[2] : (!cftensor.t<B, [batch, curr], [1, 1]>) -> !cftensor.t<B, [batch, curr, 1], [1, 1, poly]>
// CHECK: %{{[0-9]+}} = cftensor.repeat %{{[0-9]+}}[2] size "poly" : (!cftensor.t<B, [batch, curr, 1], [1, 1, poly]>) -> !cftensor.t<B, [batch, curr, poly], [1, 1, 1]>
// CHECK: %{{[0-9]+}} = cftensor.sym : !cftensor.t<E, [1, curr], [batch, 1]>
// CHECK: %{{[0-9]+}} = cftensor.combine_poly %{{[0-9]+}}, %{{[0-9]+}} : (!cftensor.t<R, [batch, curr, poly], [1, 1, 1]>, !cftensor.t<R, [batch, curr], [1, 1]>) -> !cftensor.t<P, [batch, curr], [1, 1]>
// CHECK: %{{[0-9]+}}, %{{[0-9]+}} = cftensor.if %{{[0-9]+}} : (!cftensor.t<B, [1, 1], [batch, curr]>) -> (!cftensor.t<R, [batch, curr, sym], [1, 1, 1]>, !cftensor.t<R, [batch, curr], [1, 1]>) then {
// CHECK: %{{[0-9]+}} = cftensor.noise_to_sym %{{[0-9]+}} : (!cftensor.t<E, [1, curr], [batch, 1]>) -> !cftensor.t<S, [1, curr], [batch, 1]>
// CHECK: %{{[0-9]+}} = cftensor.dot %{{[0-9]+}}, %{{[0-9]+}} : (!cftensor.t<N, [1, curr, prev], [batch, 1, 1]>, !cftensor.t<R, [1, curr, prev], [batch, 1, 1]>) -> !cftensor.t<P, [1, curr], [batch, 1]>
// CHECK: %{{[0-9]+}} = cftensor.map_neuron %{{[0-9]+}} : (!cftensor.t<P, [1, curr], [batch, 1]>) -> !cftensor.t<N, [poly], [1] :: N, [1, 1], [batch, curr]>
// CHECK: %{{[0-9]+}}, %{{[0-9]+}} = cftensor.interval_inner %{{[0-9]+}}, %{{[0-9]+}}, %{{[0-9]+}}[2] : (!cftensor.t<R, [poly], [1] :: R, [1, curr], [batch, 1]>, !cftensor.t<R, [poly], [1] :: R, [batch, 1], [1, curr]>, !cftensor.t<R, [poly], [1] :: R, [batch, 1], [1, curr]>) -> (!cftensor.t<R, [batch, curr], [1, 1]>, !cftensor.t<R, [batch, curr], [1, 1]>)
// CHECK: %{{[0-9]+}} = cftensor.inner %{{[0-9]+}}, %{{[0-9]+}}[2] : (!cftensor.t<R, [poly, 1], [1, poly] :: R, [1, curr], [batch, 1]>, !cftensor.t<R, [poly, poly], [1, 1] :: P, [batch, 1], [1, curr]>) -> !cftensor.t<R, [batch, curr, poly], [1, 1, 1]>
// CHECK: %{{[0-9]+}} = cftensor.layer_traverse(%{{[0-9]+}}) : (!cftensor.t<P, [batch, curr], [1, 1]>) -> !cftensor.t<P, [batch, curr], [1, 1]> priority {
// CHECK: %{{[0-9]+}} = cftensor.unary "neg" %{{[0-9]+}} : (!cftensor.t<I, [1], [lay] :: N, [1, 1], [batch, curr]>) -> !cftensor.t<I, [1], [lay] :: N, [1, 1], [batch, curr]>
// CHECK: %{{[0-9]+}} = cftensor.substitute %{{[0-9]+}}, %{{[0-9]+}}, %{{[0-9]+}}[2] : (!cftensor.t<R, [lay], [1] :: R, [batch, curr], [1, 1]>, !cftensor.t<P, [lay], [1] :: P, [batch, 1], [1, curr]>, !cftensor.t<P, [lay], [1] :: P, [batch, 1], [1, curr]>) -> !cftensor.t<P, [batch, curr], [1, 1]>
// CHECK: %{{[0-9]+}} = cftensor.while(%{{[0-9]+}}) : (!cftensor.t<P, [batch, curr], [1, 1]>) -> !cftensor.t<P, [batch, curr], [1, 1]> before {
// CHECK: %{{[0-9]+}} = cftensor.any %{{[0-9]+}} : (!cftensor.t<R, [poly], [1] :: R, [batch, curr], [1, 1]>) -> !cftensor.t<B, [1], [1]>
// CHECK: %{{[0-9]+}} = cftensor.masked_reduce %{{[0-9]+}}, %{{[0-9]+}}[2] kind "min" : (!cftensor.t<R, [poly], [1] :: R, [batch, curr], [1, 1]>, !cftensor.t<R, [poly], [1] :: R, [batch, curr], [1, 1]>) -> !cftensor.t<R, [batch, curr], [1, 1]>
// CHECK: %{{[0-9]+}} = cftensor.merge_top %{{[0-9]+}} : (!cftensor.t<R, [poly], [1] :: R, [batch, curr], [1, 1]>) -> !cftensor.t<R, [batch, curr, poly], [1, 1, 1]>
// CHECK: %{{[0-9]+}} = cftensor.split_inner %{{[0-9]+}}, %{{[0-9]+}}, %{{[0-9]+}}[2] : (!cftensor.t<R, [poly, 1], [1, poly] :: R, [batch, curr], [1, 1]>, !cftensor.t<R, [poly, poly], [1, 1] :: P, [batch, 1], [1, curr]>, !cftensor.t<R, [poly, poly], [1, 1] :: P, [batch, 1], [1, curr]>) -> !cftensor.t<R, [batch, curr, poly], [1, 1, 1]>
// CHECK: %{{[0-9]+}} = cftensor.const_to_poly %{{[0-9]+}} : (!cftensor.t<const R, [1], [1]>) -> !cftensor.t<const P, [1], [1]>
// CHECK: %{{[0-9]+}} = cftensor.const_to_sym %{{[0-9]+}} : (!cftensor.t<const R, [1], [1]>) -> !cftensor.t<const S, [1], [1]>
// CHECK: %{{[0-9]+}} = cftensor.remove_dim %{{[0-9]+}}[2] : (!cftensor.t<R, [batch, curr, 1], [1, 1, 1]>) -> !cftensor.t<R, [batch, curr], [1, 1]>
// CHECK: %{{[0-9]+}} = cftensor.reduce %{{[0-9]+}}[2] kind "max" : (!cftensor.t<R, [batch, curr, poly], [1, 1, 1]>) -> !cftensor.t<R, [batch, curr], [1, 1]>
// CHECK: %{{[0-9]+}} = cftensor.masked_reduce %{{[0-9]+}}, %{{[0-9]+}}[2] kind "max" : (!cftensor.t<R, [batch, curr, poly], [1, 1, 1]>, !cftensor.t<R, [batch, curr, poly], [1, 1, 1]>) -> !cftensor.t<R, [batch, curr], [1, 1]>
// CHECK: %{{[0-9]+}} = cftensor.input "s" : !cftensor.t<R, [s0], [1] :: const R, [2*batch, curr*poly], [1, lay]>

// The generic form spells the properties out:
// GENERIC: "builtin.module"() ({
// GENERIC-NEXT: "cftensor.flow"() <{direction = "forward", transformer = "deeppoly", members = ["l:R:lower", "u:R:upper", "L:P:lower", "U:P:upper"]}> : () -> ()
// GENERIC-NEXT: "cftensor.rule"() <{transformer = "deepz", operator = "Neuron_add"}> ({
// GENERIC-NEXT: %0 = "cftensor.input"() <{input_name = "curr"}> : () -> !cftensor.t<N, [1, curr], [batch, 1]>
// GENERIC: "cftensor.reduce"(%{{[0-9]+}}) <{dim = #builtin.int<2>, kind = "sum"}> : (!cftensor.t<R, [sym], [1] :: R, [batch, curr], [1, 1]>) -> !cftensor.t<R, [batch, curr], [1, 1]>
// GENERIC: "cftensor.clamp"(%{{[0-9]+}}) <{min = 0.000000e+00 : f64}>
// GENERIC: "cftensor.if"(%{{[0-9]+}}) ({
// GENERIC: "cftensor.interval_inner"(%{{[0-9]+}}, %{{[0-9]+}}, %{{[0-9]+}}) <{dim = #builtin.int<2>}>
// GENERIC: "cftensor.layer_traverse"(%{{[0-9]+}}) ({
// GENERIC: "cftensor.while"(%{{[0-9]+}}) ({
// GENERIC: "cftensor.masked_reduce"(%{{[0-9]+}}, %{{[0-9]+}}) <{dim = #builtin.int<2>, kind = "min"}>
// GENERIC: "cftensor.remove_dim"(%{{[0-9]+}}) <{dim = #builtin.int<2>}>
// GENERIC: "cftensor.clamp"(%{{[0-9]+}}) <{min = -1.000000e+00 : f64, max = 1.000000e+00 : f64}>
// GENERIC: "cftensor.clamp"(%{{[0-9]+}}) <{max = 0.000000e+00 : f64}>
// GENERIC: "cftensor.reduce"(%{{[0-9]+}}) <{dim = #builtin.int<2>, kind = "max"}>
// GENERIC: "cftensor.masked_reduce"(%{{[0-9]+}}, %{{[0-9]+}}) <{dim = #builtin.int<2>, kind = "max"}>
// GENERIC: "cftensor.input"() <{input_name = "s"}> : () -> !cftensor.t<R, [s0], [1] :: const R, [2*batch, curr*poly], [1, lay]>
