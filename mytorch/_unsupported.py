"""The parts of torch's API that mytorch leaves out, and the one mechanism that reports them.

Every public name of ``torch`` and of ``torch.Tensor`` either works in mytorch or is listed in
``LEFT_OUT`` below, grouped by *why* it is left out. A listed name is not an ``AttributeError``
(which reads like a typo): ``mytorch.compile``-style lookups return a placeholder that raises
``NotImplementedError`` naming the torch API when it is called (or, for a tensor property, when it
is read). ``tests/test_torch_surface.py`` builds the list of torch's names from real torch and
checks that each one is implemented or listed here, and that every listed one reports itself.
"""
from __future__ import annotations

from typing import Any, NoReturn

__all__ = ["LEFT_OUT", "Unsupported", "unsupported_error", "module_getattr", "tensor_fallback"]

# group -> (why it is left out, names in `torch`, names of `torch.Tensor`)
LEFT_OUT: dict[str, tuple[str, str, str]] = {
    "quantization": (
        "quantized tensors and their kernels are out of the book's scope",
        """QInt32Storage QInt8Storage QUInt2x4Storage QUInt4x2Storage QUInt8Storage
        choose_qparams_optimized dequantize empty_quantized fake_quantize_per_channel_affine
        fake_quantize_per_tensor_affine fbgemm_linear_fp16_weight
        fbgemm_linear_fp16_weight_fp32_activation fbgemm_linear_int8_weight
        fbgemm_linear_int8_weight_fp32_activation fbgemm_linear_quantize_weight
        fbgemm_pack_gemm_matrix_fp16 fbgemm_pack_quantized_matrix fused_moving_avg_obs_fake_quant
        int_repr per_channel_affine per_channel_affine_float_qparams per_channel_symmetric
        per_tensor_affine per_tensor_symmetric q_per_channel_axis q_per_channel_scales
        q_per_channel_zero_points q_scale q_zero_point qint32 qint8 qscheme quantization
        quantize_per_channel quantize_per_tensor quantize_per_tensor_dynamic quantized_batch_norm
        quantized_gru quantized_gru_cell quantized_lstm quantized_lstm_cell quantized_max_pool1d
        quantized_max_pool2d quantized_max_pool3d quantized_rnn_relu_cell quantized_rnn_tanh_cell
        quint2x4 quint4x2 quint8 ao""",
        """dequantize int_repr q_per_channel_axis q_per_channel_scales q_per_channel_zero_points
        q_scale q_zero_point qscheme""",
    ),
    "sub-byte and packed dtypes": (
        "NumPy (and ml_dtypes) have no arrays of these packed or bit-width types",
        """bits16 bits1x8 bits2x4 bits4x2 bits8 int1 int2 int3 int4 int5 int6 int7 uint1 uint2
        uint3 uint4 uint5 uint6 uint7 float4_e2m1fn_x2 complex32 chalf""",
        "chalf",
    ),
    "sparse and compressed layouts": (
        "mytorch has sparse COO tensors (mytorch/sparse/) but not the compressed layouts; these "
        "methods of a dense torch.Tensor are not there",
        """sparse_bsc sparse_bsc_tensor sparse_bsr sparse_bsr_tensor sparse_compressed_tensor
        sparse_csc sparse_csc_tensor sparse_csr sparse_csr_tensor
        ccol_indices_copy col_indices_copy crow_indices_copy row_indices_copy indices_copy
        values_copy dsmm hsmm hspmm saddmm smm sspaddmm resize_as_sparse_""",
        """ccol_indices coalesce col_indices crow_indices dense_dim indices is_coalesced row_indices
        smm sparse_dim sparse_mask sparse_resize_ sparse_resize_and_clear_ sspaddmm to_sparse_bsc
        to_sparse_bsr to_sparse_csc to_sparse_csr values
        resize_as_sparse_""",
    ),
    "nested and masked tensors": (
        "ragged (nested) and masked tensors are not part of mytorch",
        "nested jagged masked segment_reduce",
        "to_padded_tensor",
    ),
    "other backends": (
        "mytorch runs on the CPU (NumPy) and on CUDA GPUs (CuPy) only: no MKL-DNN, Vulkan, XLA, "
        "IPU, MTIA, cuDNN or MIOpen kernels",
        """cudnn_affine_grid_generator cudnn_batch_norm cudnn_convolution cudnn_convolution_add_relu
        cudnn_convolution_relu cudnn_convolution_transpose cudnn_grid_sampler cudnn_is_acceptable
        miopen_batch_norm miopen_convolution miopen_convolution_add_relu miopen_convolution_relu
        miopen_convolution_transpose miopen_ctc_loss miopen_depthwise_convolution miopen_rnn
        mkldnn_adaptive_avg_pool2d mkldnn_convolution mkldnn_linear_backward_weights
        mkldnn_max_pool2d mkldnn_max_pool3d mkldnn_rnn_layer mtia is_vulkan_available
        has_lapack has_mkl has_openmp has_spectral compiled_with_cxx11_abi get_device_module
        Stream Event""",
        "to_mkldnn ipu mtia xpu record_stream",
    ),
    "compilers, TorchScript, export and graphs": (
        "mytorch runs eagerly: it has no tracer, compiler or intermediate representation",
        """jit fx export compiler func vmap cond while_loop library ops classes cpp package
        overrides fork wait futures Future AliasDb AnyType Argument ArgumentSpec AwaitType Block
        BoolType BufferDict CallStack Capsule ClassType Code CompilationUnit CompleteArgumentSpec
        ConcreteModuleType ConcreteModuleTypeBuilder DeepCopyMemoTable DeviceObjType DictType
        DisableTorchFunction DisableTorchFunctionSubclass DispatchKey DispatchKeySet EnumType
        ErrorReport ExecutionPlan FatalError FileCheck FloatType FunctionSchema FutureType
        Gradient Graph GraphExecutorState IODescriptor InferredType IntType InterfaceType
        JITException ListType LiteScriptModule LockingLogger LoggerBase ModuleDict Node NoneType
        NoopLogger NumberType OperatorInfo OptionalType PRIVATE_OPS ParameterDict PyObjectType
        PyTorchFileReader PyTorchFileWriter RRefType ScriptClass ScriptClassFunction ScriptDict
        ScriptDictIterator ScriptDictKeyIterator ScriptFunction ScriptList ScriptListIterator
        ScriptMethod ScriptModule ScriptModuleSerializer ScriptObject ScriptObjectProperty
        SerializationStorageContext DeserializationStorageContext StaticModule StreamObjType
        StringType SymBool SymBoolType SymFloat SymInt SymIntType Tag TensorType TracingState
        TupleType Type UnionType Use Value AggregationType AVG SUM ThroughputBenchmark
        BenchmarkConfig BenchmarkExecutionStats ExcludeDispatchKeyGuard import_ir_module
        import_ir_module_from_buffer merge_type_from_type_comment parse_ir parse_schema
        parse_type_comment unify_type_list sym_constrain_range sym_constrain_range_for_size
        sym_float sym_fresh_size sym_int sym_ite sym_max sym_min sym_not sym_sqrt sym_sum
        prepare_multiprocessing_environment profiler_allow_cudagraph_cupti_lazy_reinit_cuda12
        monitor hub testing""",
        "module_load",
    ),
    "mixed precision": (
        "autocast's lower-level switches are not implemented (torch.autocast is, on the CPU)",
        """autocast_decrement_nesting autocast_increment_nesting clear_autocast_cache
        get_autocast_cpu_dtype get_autocast_gpu_dtype get_autocast_ipu_dtype
        get_autocast_xla_dtype is_autocast_cache_enabled is_autocast_cpu_enabled
        is_autocast_ipu_enabled is_autocast_xla_enabled
        set_autocast_cache_enabled set_autocast_cpu_dtype set_autocast_cpu_enabled
        set_autocast_dtype set_autocast_enabled set_autocast_gpu_dtype set_autocast_ipu_dtype
        set_autocast_ipu_enabled set_autocast_xla_dtype set_autocast_xla_enabled GradScaler""",
        "",
    ),
    "complex numbers": (
        "mytorch has complex dtypes but not the real/imaginary views or lazy conjugation",
        """angle conj conj_physical conj_physical_ complex imag polar real
        view_as_complex view_as_complex_copy view_as_real view_as_real_copy""",
        "angle conj conj_physical conj_physical_ imag real",
    ),
    "linear algebra beyond torch.linalg": (
        "legacy or advanced decompositions; the book uses torch.linalg",
        """eig geqrf lobpcg lstsq lu lu_solve lu_unpack matrix_exp
        matrix_power matrix_rank orgqr ormqr pca_lowrank qr solve svd_lowrank symeig
        triangular_solve chain_matmul nuclear_norm frobenius_norm native_norm""",
        """eig geqrf lstsq lu lu_solve matrix_exp matrix_power
        orgqr ormqr qr solve symeig triangular_solve""",
    ),
    "special and number-theory functions": (
        "rarely used element-wise functions not (yet) built",
        """erfc erfc_ i0 i0_ igamma igammac mvlgamma sinc sinc_ deg2rad_ rad2deg_
        frexp gcd gcd_ lcm lcm_ ldexp ldexp_ heaviside nextafter xlogy_""",
        """digamma_ erfc erfc_ erfinv_ i0 i0_ igamma igamma_ igammac igammac_ lgamma_ mvlgamma
        mvlgamma_ polygamma_ sinc sinc_ deg2rad_ rad2deg_
        frexp gcd gcd_ lcm lcm_ ldexp ldexp_ heaviside heaviside_ nextafter nextafter_ xlogy_""",
    ),
    "statistics and scans": (
        "statistics and scans not (yet) built",
        """corrcoef cov dist logcumsumexp renorm
        histogramdd cumulative_trapezoid trapezoid trapz gradient vander combinations pdist
        unravel_index""",
        """corrcoef cov dist logcumsumexp renorm
        renorm_""",
    ),
    "scatter into views and copy variants": (
        "the *_scatter inverses of views and the functional *_copy variants (used by compilers)",
        """as_strided_scatter diagonal_scatter select_scatter slice_scatter slice_inverse
        index_reduce alias_copy as_strided_copy detach_copy diagonal_copy expand_copy
        permute_copy select_copy slice_copy split_copy split_with_sizes_copy squeeze_copy t_copy
        transpose_copy unbind_copy unfold_copy unsqueeze_copy view_copy""",
        """as_strided_scatter diagonal_scatter select_scatter slice_scatter slice_inverse
        index_reduce index_reduce_""",
    ),
    "signal processing": (
        "spectral transforms (torch.fft, stft) are not built",
        "fft signal stft istft windows",
        "stft istft",
    ),
    "functional forms with torch's internal signatures": (
        "aten-level duplicates of torch.nn.functional with different argument orders or "
        "integer reduction codes; use torch.nn.functional",
        """affine_grid_generator alpha_dropout alpha_dropout_ batch_norm batch_norm_backward_elemt
        batch_norm_backward_reduce batch_norm_elemt batch_norm_gather_stats
        batch_norm_gather_stats_with_counts batch_norm_stats batch_norm_update_stats
        binary_cross_entropy_with_logits channel_shuffle native_channel_shuffle
        constant_pad_nd conv_tbc convolution cosine_embedding_loss ctc_loss embedding_bag
        embedding_renorm_ feature_alpha_dropout feature_alpha_dropout_ feature_dropout
        feature_dropout_ grid_sampler grid_sampler_2d grid_sampler_3d gru gru_cell
        hinge_embedding_loss instance_norm kl_div lstm lstm_cell margin_ranking_loss
        native_batch_norm native_dropout native_group_norm native_layer_norm poisson_nll_loss
        rnn_relu rnn_relu_cell rnn_tanh rnn_tanh_cell
        triplet_margin_loss bilinear dropout_ adaptive_max_pool1d""",
        "",
    ),
    "storage and memory internals": (
        "raw storage manipulation, the legacy typed storage classes, custom memory formats and "
        "pointer-level APIs (mytorch has TypedStorage and UntypedStorage)",
        """BFloat16Storage BFloat16Tensor BoolStorage ByteStorage CharStorage ComplexDoubleStorage
        ComplexFloatStorage DoubleStorage FloatStorage HalfStorage IntStorage LongStorage
        ShortStorage Storage StorageBase from_file frombuffer from_dlpack to_dlpack empty_permuted
        set_default_tensor_type
        set_flush_denormal legacy_contiguous_format channels_last_3d hash_tensor nonzero_static
        init_num_threads set_deterministic_debug_mode get_deterministic_debug_mode
        is_warn_always_enabled set_warn_always thread_safe_generator""",
        """set_ resize resize_as storage_type new_empty_strided const_data_ptr dim_order apply_
        map_ map2_ as_subclass hash_tensor nonzero_static index""",
    ),
    "autograd internals": (
        "legacy Variable attributes and internal autograd bookkeeping",
        "",
        "reinforce",
    ),
    "other modules and internals": (
        "torch sub-packages outside the book's scope, and names torch's own modules use",
        """quasirandom torch_version version binomial is_distributed get_file_path TYPE_CHECKING
        USE_GLOBAL_DEPS USE_RTLD_GLOBAL_WITH_LIBTORCH classproperty bit ComplexType fill storage
        types""",
        "",
    ),
}

# The listed Tensor names that torch exposes as properties (reading them raises at once).
TENSOR_PROPERTIES = frozenset({"imag", "real"})

_TORCH_NAMES: dict[str, str] = {}
_TENSOR_NAMES: dict[str, str] = {}
for _group, (_why, _top, _tensor) in LEFT_OUT.items():
    for _n in _top.split():
        _TORCH_NAMES[_n] = _group
    for _n in _tensor.split():
        _TENSOR_NAMES[_n] = _group


def unsupported_error(qualname: str, group: str | None = None) -> NotImplementedError:
    """The error for a torch API mytorch leaves out: it names the API and says why."""
    why = f" ({group}: {LEFT_OUT[group][0]})" if group in LEFT_OUT else ""
    return NotImplementedError(f"mytorch does not implement {qualname}{why}")


class Unsupported:
    """Stands in for a torch function, class or module that mytorch leaves out.

    It exists (``hasattr`` is True, as in torch), but calling it, subclassing it or using it as
    a module raises ``NotImplementedError`` naming the torch API."""

    __slots__ = ("_qualname", "_group", "_namespace")

    def __init__(self, qualname: str, group: str | None, namespace: bool = True) -> None:
        # namespace: it may stand for a module or class (torch.jit -> torch.jit.script); a tensor
        # method's placeholder has no attributes, like the method it replaces, so duck-typing
        # probes such as matplotlib's ``y.index.to_numpy`` get their AttributeError
        self._qualname, self._group, self._namespace = qualname, group, namespace

    def __call__(self, *args: Any, **kwargs: Any) -> NoReturn:
        raise unsupported_error(self._qualname, self._group)

    def __getattr__(self, name: str) -> Unsupported:
        if name.startswith("__") or not self._namespace:
            raise AttributeError(f"'{self._qualname}' has no attribute '{name}'")
        return Unsupported(f"{self._qualname}.{name}", self._group)

    def __mro_entries__(self, bases: tuple) -> NoReturn:
        raise unsupported_error(self._qualname, self._group)

    def __repr__(self) -> str:
        return f"<{self._qualname}: not implemented in mytorch>"


def module_getattr(module: str, name: str) -> Any:
    """``__getattr__`` of the ``mytorch`` package: a submodule not imported yet (imported now, as
    torch does for ``torch.onnx``), or a placeholder for a left-out torch name."""
    if not name.startswith("_"):
        import importlib
        import importlib.machinery
        import sys

        path = getattr(sys.modules.get(module), "__path__", None)  # this package's own folder
        if path and importlib.machinery.PathFinder.find_spec(f"{module}.{name}", path) is not None:
            return importlib.import_module(f"{module}.{name}")
    group = _TORCH_NAMES.get(name)
    if group is None:
        raise AttributeError(f"module '{module}' has no attribute '{name}'")
    return Unsupported(f"{module.replace('mytorch', 'torch', 1)}.{name}", group)


def tensor_fallback(cls_name: str, name: str) -> Unsupported:
    """A left-out ``torch.Tensor`` method (a placeholder) or property (raises); else AttributeError."""
    group = _TENSOR_NAMES.get(name)
    if group is None:
        raise AttributeError(f"'{cls_name}' object has no attribute '{name}'")
    if name in TENSOR_PROPERTIES:
        raise unsupported_error(f"torch.Tensor.{name}", group)
    return Unsupported(f"torch.Tensor.{name}", group, namespace=False)
