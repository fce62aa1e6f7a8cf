"""``ndgrad.distributions``: probability distributions with PyTorch's ``torch.distributions``
API (sampling, reparameterized sampling, log densities, moments, entropies, KL divergences,
transforms and constraints) on ndgrad tensors.

Example:
    >>> import ndgrad
    >>> from ndgrad import distributions as D
    >>> _ = ndgrad.manual_seed(0)
    >>> policy = D.Categorical(logits=ndgrad.zeros(3, requires_grad=True))
    >>> action = policy.sample()
    >>> policy.log_prob(action).requires_grad
    True
"""

from . import constraints, transforms  # noqa: F401 - the submodules, as torch's
from .constraint_registry import biject_to, transform_to
from .continuous import (Cauchy, Exponential, GeneralizedPareto, Gumbel, Laplace, Normal, StudentT,
                         Uniform)
from .continuous_bernoulli import ContinuousBernoulli
from .counts import Multinomial, NegativeBinomial
from .discrete import (Bernoulli, Binomial, Categorical, Geometric, OneHotCategorical,
                       OneHotCategoricalStraightThrough, Poisson)
from .distribution import Distribution
from .exp_family import ExponentialFamily
from .gamma import Beta, Chi2, Dirichlet, FisherSnedecor, Gamma
from .independent import Independent
from .kl import kl_divergence, register_kl
from .low_rank_multivariate_normal import LowRankMultivariateNormal
from .mixture_same_family import MixtureSameFamily
from .multivariate_normal import MultivariateNormal
from .random_matrices import LKJCholesky, Wishart
from .relaxed_bernoulli import RelaxedBernoulli
from .relaxed_categorical import RelaxedOneHotCategorical
from .transformed_distribution import HalfCauchy, HalfNormal, LogNormal, TransformedDistribution
from .transformed_families import InverseGamma, Kumaraswamy, LogisticNormal, Pareto, Weibull
from .transforms import *  # noqa: F403 - the transforms are exported at this level too
from .von_mises import VonMises
# registers the cross-family KL rules; the rest are torch's public submodule names
from . import kl_cross, relaxed_bernoulli, relaxed_categorical, utils  # noqa: E402,F401

__all__ = [
    "Bernoulli", "Beta", "Binomial", "Categorical", "Cauchy", "Chi2", "ContinuousBernoulli",
    "Dirichlet", "Distribution", "Exponential", "ExponentialFamily", "FisherSnedecor", "Gamma",
    "GeneralizedPareto", "Geometric", "Gumbel", "HalfCauchy", "HalfNormal", "Independent",
    "InverseGamma", "Kumaraswamy", "LKJCholesky", "Laplace", "LogNormal", "LogisticNormal",
    "LowRankMultivariateNormal", "MixtureSameFamily", "Multinomial", "MultivariateNormal",
    "NegativeBinomial", "Normal", "OneHotCategorical", "OneHotCategoricalStraightThrough",
    "Pareto", "Poisson", "RelaxedBernoulli", "RelaxedOneHotCategorical", "StudentT",
    "TransformedDistribution", "Uniform", "VonMises", "Weibull", "Wishart", "biject_to",
    "kl_divergence", "register_kl", "transform_to",
]
__all__.extend(transforms.__all__)
