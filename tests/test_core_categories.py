"""The kernel-name classifier, on names taken from the real ncu records and trace headers."""

from __future__ import annotations

import pytest

from simfront.core.categories import CATEGORIES, kernel_category, short_name


@pytest.mark.parametrize("name,category", [
    ("nvjet_sm90_tst_192x128_64x5_1x2_h_bz_coopB_NNT", "gemm"),
    ("void cublasLt::splitKreduce_kernel<32, 16, int, float, __nv_bfloat16>(cublasLt::Params)", "gemm"),
    ("sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64", "gemm"),
    ("_chunk_scan_fwd_kernel", "ssm"),
    ("_bmm_chunk_bwd_kernel", "ssm"),
    ("_state_passing_fwd_kernel", "ssm"),
    ("_chunk_cumsum_bwd_kernel", "ssm"),
    ("void selective_scan_bwd_kernel<Selective_Scan_bwd_kernel_traits<128, 16, 1, 1, 1, 1, 1, "
     "c10::BFloat16, float>>(SSMParamsBwd)", "ssm"),
    ("_Z25selective_scan_fwd_kernelI32Selective_Scan_fwd_kernel_traitsILi32ELi4EEEv13SSMParamsBase", "ssm"),
    ("_layer_norm_fwd_1pass_kernel", "normalization"),
    ("void native::<unnamed>::cunn_SoftMaxForward<4, float, float, float, "
     "native::<unnamed>::LogSoftMaxForwardEpilogue>(T4 *, const T2 *, int)", "loss"),
    ("void native::<unnamed>::nll_loss_forward_reduce_cuda_kernel_2d<float, float, long>(T1 *)", "loss"),
    # AdamW's kernels carry elementwise functors and lambdas; they are the optimizer.
    ("void native::<unnamed>::multi_tensor_apply_kernel<native::<unnamed>::TensorListMetadata<2>, "
     "native::<unnamed>::UnaryOpFunctor<float, 2, 1, 1>>(T1, T2, T3...)", "optimizer"),
    # "lambda" must not read as the LAMB optimizer
    ("void native::unrolled_elementwise_kernel<native::direct_copy_kernel_cuda(at::TensorIteratorBase &)"
     "::[lambda() (instance 3)]::operator ()() const>(int, T1, T2)", "elementwise"),
    ("void native::vectorized_elementwise_kernel<4, native::FillFunctor<float>, std::array<char *, 1>>"
     "(int, T2, T3)", "elementwise"),
    ("void native::reduce_kernel<128, 4, native::ReduceOp<float>>(T3)", "elementwise"),
    ("void native::<unnamed>::conv_depthwise2d_forward_kernel_generic<c10::BFloat16, int>(...)", "conv"),
    ("void causal_conv1d_fwd_kernel<Causal_conv1d_fwd_kernel_traits<128, 4>>(ConvParamsBase)", "conv"),
    ("void native::vectorized_gather_kernel<16, long>(char *, char *, T2 *, int, long)", "embedding"),
    ("void radix_sort::DeviceRadixSortOnesweepKernel<radix::policy_hub<long>>(T1)", "embedding"),
    ("some_kernel_nobody_knows", "other"),
])
def test_classifier(name, category):
    assert kernel_category(name) == category
    assert category in CATEGORIES


@pytest.mark.parametrize("name,short", [
    ("void native::<unnamed>::cunn_SoftMaxForward<4, float>(T4 *, const T2 *, int)", "cunn_SoftMaxForward"),
    ("_chunk_scan_fwd_kernel", "_chunk_scan_fwd_kernel"),
    ("_ZN2at6native29vectorized_elementwise_kernelILi4ENS0_11FillFunctorIfEEEEviT0_",
     "vectorized_elementwise_kernel"),
    ("_Z25selective_scan_fwd_kernelI32Selective_Scan_fwd_kernel_traitsEv13SSMParamsBase",
     "selective_scan_fwd_kernel"),
])
def test_short_name(name, short):
    assert short_name(name) == short


def test_every_real_kernel_is_named():
    # No launch of the real steps falls through to "other": every kernel there is one of
    # the operators the study reports.
    from simfront.core.ncu import read_ncu_dir
    from conftest import NCU_DIR
    df = read_ncu_dir(NCU_DIR)
    assert (df["category"] != "other").all(), df.loc[df["category"] == "other", "short_name"].unique()


@pytest.mark.parametrize("name,short", [
    # kineto (torch.profiler) spells names as c++filt does, from the shipped what-if timelines
    ("void at::native::(anonymous namespace)::CatArrayBatchedCopy<at::native::(anonymous "
     "namespace)::OpaqueType<2u>, unsigned int, 3, 64, 64>(at::native::(anonymous namespace)::"
     "OpaqueType<2u>*, at::native::(anonymous namespace)::CatArrInputTensorMetadata<at::native::"
     "(anonymous namespace)::OpaqueType<2u>, unsigned int, 64, 64>, at::native::(anonymous "
     "namespace)::TensorSizeStride<unsigned int, 4u>, int, unsigned int)", "CatArrayBatchedCopy"),
    ("void at::native::(anonymous namespace)::nll_loss_backward_reduce_cuda_kernel_2d<float, long>"
     "(float*, float const*, long const*, float const*, float const*, bool, int, int, long, long)",
     "nll_loss_backward_reduce_cuda_kernel_2d"),
    ("void at::native::elementwise_kernel<128, 2, at::native::gpu_kernel_impl_nocast<at::native::"
     "direct_copy_kernel_cuda(at::TensorIteratorBase&)::{lambda()#3}::operator()() const::"
     "{lambda()#4}::operator()() const::{lambda(long)#1}>(at::TensorIteratorBase&, at::native::"
     "direct_copy_kernel_cuda(at::TensorIteratorBase&)::{lambda()#3}::operator()() const::"
     "{lambda()#4}::operator()() const::{lambda(long)#1} const&)::{lambda(int)#1}>(int, "
     "at::native::gpu_kernel_impl_nocast<at::native::direct_copy_kernel_cuda(at::"
     "TensorIteratorBase&)::{lambda()#3}::operator()() const::{lambda()#4}::operator()() const::"
     "{lambda(long)#1}>(at::TensorIteratorBase&, at::native::direct_copy_kernel_cuda(at::"
     "TensorIteratorBase&)::{lambda()#3}::operator()() const::{lambda()#4}::operator()() const::"
     "{lambda(long)#1} const&)::{lambda(int)#1})", "elementwise_kernel"),
])
def test_short_name_of_kineto_names(name, short):
    assert short_name(name) == short


@pytest.mark.parametrize("trace_set", ["mamba2_lm-paper", "mamba1_lm-paper", "mamba2_lm-tiny"])
def test_timeline_names_meet_ncu_names(trace_set):
    # The H100 timeline (kineto's names) and ncu's profile (ncu's names) of the same step
    # must give the same short names, launch by launch in order.
    from simfront.core.paths import repo_dir
    from simfront.core.ncu import read_ncu_csv

    d = repo_dir("traces") / trace_set
    tl = read_ncu_csv(d / "whatif" / "h100-all.csv.xz")
    ncu = read_ncu_csv(d / "ncu.csv")
    assert len(tl) == len(ncu)
    a = [short_name(n) for n in tl["kernel_name"]]
    b = [short_name(n) for n in ncu["kernel_name"]]
    assert not [n for n in a if "(" in n or "::" in n or "{" in n]
    assert a == b
