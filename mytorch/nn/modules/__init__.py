"""The layers of ``mytorch.nn``, one file per family (as in torch.nn.modules)."""
from .activation import ReLU, Sigmoid, Tanh
from .container import ModuleDict, ModuleList, ParameterDict, ParameterList, Sequential
from .flatten import Flatten, Unflatten
from .linear import Bilinear, Identity, LazyLinear, Linear
from .module import Module

__all__ = ["Module", "Sequential", "ModuleList", "ModuleDict", "ParameterList", "ParameterDict",
           "Bilinear", "Identity", "LazyLinear", "Linear", "ReLU", "Sigmoid", "Tanh", "Flatten", "Unflatten"]

from . import conv as _conv, fold as _fold, padding as _padding, pixelshuffle as _ps  # noqa: E402
from . import pooling as _pooling, upsampling as _up  # noqa: E402
from .conv import *  # noqa: E402,F401,F403
from .fold import *  # noqa: E402,F401,F403
from .padding import *  # noqa: E402,F401,F403
from .pixelshuffle import *  # noqa: E402,F401,F403
from .pooling import *  # noqa: E402,F401,F403
from .upsampling import *  # noqa: E402,F401,F403

__all__ += [*_conv.__all__, *_fold.__all__, *_padding.__all__, *_ps.__all__, *_pooling.__all__,
            *_up.__all__]

from .activation import (ELU, GELU, Hardtanh, LeakyReLU, LogSigmoid, LogSoftmax,  # noqa: E402
                         PReLU, ReLU6, RReLU, SiLU, Softmax, Softmin, Softplus)
from .activation import (CELU, GLU, SELU, Hardshrink, Hardsigmoid, Hardswish, Mish,  # noqa: E402
                         Softshrink, Softsign, Tanhshrink, Threshold)
from .attention import MultiheadAttention  # noqa: E402
from .batchnorm import BatchNorm1d, BatchNorm2d, BatchNorm3d, SyncBatchNorm  # noqa: E402
from .dropout import Dropout, Dropout1d, Dropout2d, Dropout3d  # noqa: E402
from .instancenorm import InstanceNorm1d, InstanceNorm2d, InstanceNorm3d  # noqa: E402
from .normalization import GroupNorm, LayerNorm, RMSNorm  # noqa: E402
from .rnn import GRU, LSTM, RNN, GRUCell, LSTMCell, RNNBase, RNNCell, RNNCellBase  # noqa: E402
from .sparse import Embedding, EmbeddingBag  # noqa: E402

__all__ += ["ELU", "GELU", "Hardtanh", "LeakyReLU", "LogSigmoid", "LogSoftmax", "PReLU", "ReLU6", "RReLU",
            "SiLU", "Softmax", "Softmin", "Softplus", "CELU", "GLU", "SELU", "Hardshrink", "Hardsigmoid",
            "Hardswish", "Mish", "Softshrink", "Softsign", "Tanhshrink", "Threshold", "MultiheadAttention", "BatchNorm1d", "BatchNorm2d", "SyncBatchNorm",
            "BatchNorm3d", "Dropout", "Dropout1d", "Dropout2d", "Dropout3d", "InstanceNorm1d",
            "InstanceNorm2d", "InstanceNorm3d", "GroupNorm", "LayerNorm", "RMSNorm", "GRU", "LSTM", "RNN",
            "GRUCell", "LSTMCell", "RNNBase", "RNNCell", "RNNCellBase", "Embedding", "EmbeddingBag"]
from .loss import (BCELoss, BCEWithLogitsLoss, CosineEmbeddingLoss, CrossEntropyLoss,  # noqa: E402
                   GaussianNLLLoss, HingeEmbeddingLoss, HuberLoss, KLDivLoss, L1Loss,
                   MarginRankingLoss, MSELoss, MultiLabelSoftMarginLoss, NLLLoss, PoissonNLLLoss,
                   SmoothL1Loss, SoftMarginLoss, TripletMarginLoss, TripletMarginWithDistanceLoss)

__all__ += ["BCELoss", "BCEWithLogitsLoss", "CrossEntropyLoss", "HuberLoss", "KLDivLoss", "L1Loss",
            "MSELoss", "NLLLoss", "SmoothL1Loss", "MarginRankingLoss", "HingeEmbeddingLoss",
            "CosineEmbeddingLoss", "TripletMarginLoss", "TripletMarginWithDistanceLoss",
            "SoftMarginLoss", "MultiLabelSoftMarginLoss", "GaussianNLLLoss", "PoissonNLLLoss"]
from .batchnorm import LazyBatchNorm1d, LazyBatchNorm2d, LazyBatchNorm3d  # noqa: E402

__all__ += ["LazyBatchNorm1d", "LazyBatchNorm2d", "LazyBatchNorm3d"]
from .distance import CosineSimilarity, PairwiseDistance  # noqa: E402
from .transformer import (Transformer, TransformerDecoder, TransformerDecoderLayer,  # noqa: E402
                          TransformerEncoder, TransformerEncoderLayer)

__all__ += ["CosineSimilarity", "PairwiseDistance", "Transformer", "TransformerDecoder",
            "TransformerDecoderLayer", "TransformerEncoder", "TransformerEncoderLayer"]
