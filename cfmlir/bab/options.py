"""The settings of a branch-and-bound search (:class:`BabOptions`) and what it found (:class:`BabOutcome`)."""

from __future__ import annotations

import os
from dataclasses import dataclass, field

#: ``lp_unstable=None``: every domain goes to the LP when the inputs and ReLU neurons are at most this many
SMALL_LP = 512
#: ... else the domains with at most this many unstable neurons
LP_UNSTABLE = 8
#: ``branching="auto"``: input splits when at most this many inputs vary (ACAS Xu: 5), else ReLU splits ...
AUTO_MAX_FREE_INPUTS = 16
#: ... or when at most this many vary and the network has at least :data:`INPUT_SPLIT_RELU_RATIO` ReLU neurons per
#: varying input: nn4sys_2023's pensieve_big_parallel (32 inputs, 4364 ReLUs) is decided by 3 input subdomains
#: where thousands of ReLU subdomains are not (alpha-beta-CROWN's configuration splits its inputs too); safenlp
#: (30 inputs, 128 ReLUs) and ml4acopf's 118/300-bus nets (2.7 per input) keep ReLU splits
AUTO_MAX_FREE_INPUTS_WIDE = 64
INPUT_SPLIT_RELU_RATIO = 100
#: ``memory_bytes=None``: the pool may take this share of the memory available when the search starts ...
POOL_MEMORY_SHARE = 0.25
#: ... and at least this many bytes (also the bound where the available memory cannot be read)
MIN_POOL_BYTES = 1 << 30
#: the environment variable a parallel run sets in each analysis process: how many searches may run at once on
#: this machine, which share the pools' memory (``cf-run --ray``: one instance per CPU); absent: 1
CONCURRENT_SEARCHES_ENV = "CFMLIR_CONCURRENT_SEARCHES"
#: ``pass_seconds``: the search starts its root only when the time left holds this many passes (the root's, and
#: at least one round of children bounded from it)
ROOT_AND_ROUND_PASSES = 2


def default_memory_bytes() -> int:
    """The pool's memory bound when none is given: :data:`POOL_MEMORY_SHARE` of the memory available now,
    divided among the searches that may run at once (:func:`concurrent_searches`), at least
    :data:`MIN_POOL_BYTES`.  A fixed 1 GiB stopped mnistfc 256x6 prop_10_0.05 after 53,000 subdomains in 92 s
    of its 300 (about 35 kB a subdomain: six layers' float64 bounds, multipliers, slopes) on a machine with
    21 GiB free, where alpha-beta-CROWN went on to 173,000.  Searches started together each see the same
    available memory (a pool's reservation is only virtual until used), hence the division."""
    try:
        available = os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):
        return MIN_POOL_BYTES
    return max(MIN_POOL_BYTES, int(POOL_MEMORY_SHARE * available / concurrent_searches()))


def concurrent_searches() -> int:
    """How many searches may run at once on this machine: :data:`CONCURRENT_SEARCHES_ENV`, else 1 (a value
    that is not a positive integer counts as 1)."""
    try:
        return max(1, int(os.environ.get(CONCURRENT_SEARCHES_ENV, "1")))
    except ValueError:
        return 1


@dataclass
class BabOptions:
    """``branching``: ``"relu"`` (split unstable ReLU neurons -- complete on ReLU networks -- and cut S-curve
    neurons' input intervals, :mod:`cfmlir.bab.branching`), ``"input"`` (halve input boxes) or ``"auto"``; ``heuristic``: ``"fsb"`` (filtered smart branching over ``candidates``
    scored candidates) or ``"babsr"`` (the best score alone); ``batch``: domains branched per round (their
    children are bounded in one engine call, ``engine_batch`` rows at most); ``refine``: recompute the
    intermediate bounds of ReLU-split children too (tighter, a full certifier pass per child); ``lp_unstable``:
    domains with at most this many unstable ReLUs are decided by the LP of :mod:`cfmlir.bab.exact` (0: only
    those with none, where it is exact; None: every domain of a network whose LP is small -- at most
    :data:`SMALL_LP` inputs and ReLU neurons --, else :data:`LP_UNSTABLE`); the attack's
    ``attack_restarts`` x ``attack_steps`` (the first attack) and, every ``attack_every`` rounds of ReLU
    branching, ``round_attack`` of the worst children attacked (input branching: ``input_attack`` boxes every
    round, and every child's centre evaluated); ``memory_bytes``: the pool's memory bound (past half of it: depth-first; None: a quarter
    of the memory available when the search starts, shared by the searches run at once, :func:`default_memory_bytes`);
    ``max_domains``: stop ``unknown`` after this many bounded domains (None: only the time limit);
    ``optimize`` (a :class:`cfmlir.optimize.OptimizeOptions`, or None): for a certifier with parameters
    (``alpha_deeppoly``), the root's parameters are optimised for its rows (alpha-CROWN at the root), so
    every child carries the optimised intermediate bounds; ignored for a certifier without parameters;
    ``beta``: ReLU splits enter the bound through multipliers (beta-CROWN's Lagrangian,
    :mod:`cfmlir.bab.lagrangian`) optimised per child for ``beta_iterations`` steps of Adam at ``beta_lr``,
    starting from the parent's (a warm start; a new split's multiplier starts at 0), the steps in
    ``beta_dtype`` -- used when the
    certifier carries the term symbolically (checked at the root), else the search runs without."""

    branching: str = "auto"
    heuristic: str = "fsb"
    candidates: int = 3
    #: FSB over neuron splits also bounds this many candidates ranked by the intercept score (alpha-beta-CROWN's
    #: kFSB's second ranking), the best not among the ``candidates`` by BaBSR's; 0: none.  One, not
    #: ``candidates``: on mnistfc 256x2 prop_0 (DeepPoly) 3 + 3 took 3119 subdomains and 3 + 1 1575 (BaBSR's
    #: alone 1237); on oval21 cifar_base_kw img5303 BaBSR's alone never decides in 60 s, 3 + 1 in 75 (docs/bab.md)
    intercept_candidates: int = 1
    batch: int = 64
    engine_batch: int = 1024
    refine: bool = False
    lp_unstable: int | None = None
    attack_restarts: int = 20
    attack_steps: int = 50
    round_attack: int = 8
    attack_every: int = 4
    #: input branching: this many of the worst child boxes attacked every round (an input net's forward pass
    #: is cheap; ACAS Xu prop_2 on nets 1_3/1_5/5_3: 8 boxes every 4 rounds found no counterexample in 60 s,
    #: 64 every round found each in 0.6-2.3 s); 0: the boxes' centres only
    input_attack: int = 64
    #: input branching: the dimension a box is halved along, ``"widest"`` or ``"gradient"``
    #: (:func:`cfmlir.bab.branching.input_scores`), and with ``heuristic="fsb"`` how many of the best-scored
    #: dimensions are bounded to choose from (1: the best alone).  On the eight ACAS Xu instances the
    #: gradient's FSB over 3 left open at the competition's 116 s, widest with clipping decides six
    input_split: str = "widest"
    input_candidates: int = 1
    #: input branching: each child box clipped to where its linear bounds allow a counterexample, every
    #: side cut off verified by bounding it (:mod:`cfmlir.bab.clipping`; alpha-beta-CROWN's ``clip_input_domain``)
    clip: bool = True
    memory_bytes: int | None = None
    max_domains: int | None = None
    #: the seconds one bounding pass over the whole box took (a first pass before the search, or None): under a
    #: deadline that leaves less than :data:`ROOT_AND_ROUND_PASSES` of them after the first attack, the search
    #: stops ``unknown`` before its root (the root and one round of children cannot end in time: VNN-COMP 2024
    #: yolo_2023's TinyYOLO, a 140 s pass under 300 s, ran into the limit and ended ``timeout``)
    pass_seconds: float | None = None
    optimize: object = None
    #: what ``optimize`` optimises at the root: ``"all"`` -- every parameter, the root bounded by a pass of its
    #: own (intermediate layers' slopes too: tighter carried bounds) -- or ``"rows"`` -- with a first pass's
    #: layer bounds (``run_bab(root_bounds=...)``), only the rows' own parameters, every run one of the rows
    #: alone (:meth:`cfmlir.bab.bounding.CertifierBounding.bound_optimized`); ``"all"`` does that too when
    #: the time left holds less than :data:`ROOT_AND_ROUND_PASSES` passes.  ``--certifier auto`` runs ``"rows"``
    #: on residual nets, whose whole-network optimisation took 20-40 s on cifar10_resnet (docs/bab.md)
    root_optimize: str = "all"
    #: whether the root's optimised parameters reach the children when the search splits the input box (ACAS
    #: Xu): every input child recomputes every layer, from the parameters' initial values but for the rows',
    #: so they buy less there (``--certifier auto`` turns it off: on the ACAS Xu subset carrying them halved the
    #: subdomains per second and decided the same).  The root itself is optimised either way, its bounds kept:
    #: a root the optimisation verifies needs no split (VNN-COMP 2024 ml4acopf_2024 ``14_ieee prop3`` on the
    #: linear nets: unknown after 600 s of input splits, verified at the root with 20 iterations)
    optimize_input: bool = True
    #: ReLU branching searches a tree per disjunct the root leaves open (alpha-beta-CROWN's): the root is
    #: copied once per such disjunct, each copy answerable for its own (the other disjuncts' rows set to
    #: +inf, refuted by their own copies), so a split chosen for one disjunct is not paid again under the
    #: splits of another.  One joint tree, where a subdomain stays open while any disjunct is, grows like the
    #: product of the disjuncts' trees: mnistfc 256x2 prop_1_0.03 was open after 62,000 subdomains in 120 s,
    #: its nine disjuncts alone take 45-2,515 each (4,777 in all).  False: one joint tree.
    per_disjunct: bool = True
    seed: int = 0
    beta: bool = True
    #: 5, not beta-CROWN's 20: each iteration is a forward and backward pass of every open child, and with
    #: the parent's multipliers as the start a few steps get most of the gain.  Measured on a quiet 2-core CPU
    #: (mnistfc 256x2 prop_0, time to unsat): 20 -> 12.0 s, 10 -> 7.5 s, 5 -> 5.0 s, 3 -> 4.5 s, 2 -> 6.1 s,
    #: none -> no answer in 60 s; on nets BaB cannot decide in a minute (256x4/256x6, eran 9x200) 5 explores
    #: 3-4x the subdomains of 20 and ends with a better worst bound (docs/bab.md)
    beta_iterations: int = 5
    beta_lr: float = 0.05
    #: the precision of the multipliers' gradient steps ("float32", "float64", or None: the search's own).
    #: The steps only steer the multipliers (any ``beta >= 0`` gives a sound bound), so in a float64 search
    #: they run in raw float32 and one final float64 run per child gives the bound kept
    #: (:meth:`cfmlir.bab.bounding.CertifierBounding.optimize_beta`)
    beta_dtype: str | None = "float32"
    #: the precision FSB's candidate children are bounded in to *choose* the split ("float32", "float64", or
    #: None: the search's own).  In another precision than the search's, their rows only score the candidates:
    #: the chosen children start from their parent's rows and take their own from the split multipliers'
    #: optimisation, whose kept rows are runs in the search's precision -- so this applies only where that
    #: optimisation runs (a certifier carrying the Lagrangian term; else the candidates are bounded in the
    #: search's precision, their rows kept, as before), and only on ReLU splits (curve cuts: the search's)
    fsb_dtype: str | None = "float32"

    def __post_init__(self):
        if self.branching not in ("auto", "relu", "input"):
            raise ValueError(f"branching must be auto, relu or input, not '{self.branching}'")
        if self.heuristic not in ("fsb", "babsr"):
            raise ValueError(f"heuristic must be fsb or babsr, not '{self.heuristic}'")
        if self.input_split not in ("widest", "gradient"):
            raise ValueError(f"input_split must be widest or gradient, not '{self.input_split}'")
        if self.root_optimize not in ("all", "rows"):
            raise ValueError(f"root_optimize must be all or rows, not '{self.root_optimize}'")
        if not self.beta_lr > 0:
            raise ValueError(f"beta_lr must be positive, got {self.beta_lr}")
        for name in ("beta_dtype", "fsb_dtype"):
            if getattr(self, name) not in (None, "float32", "float64"):
                raise ValueError(f"{name} must be float32, float64 or None, not '{getattr(self, name)}'")
        if int(self.intercept_candidates) < 0:
            raise ValueError(f"intercept_candidates must be >= 0, got {self.intercept_candidates}")
        for name in ("candidates", "input_candidates", "batch", "engine_batch", "memory_bytes", "beta_iterations"):
            if getattr(self, name) is None and name == "memory_bytes":
                continue
            if int(getattr(self, name)) <= 0:
                raise ValueError(f"{name} must be positive, got {getattr(self, name)}")


@dataclass
class BabOutcome:
    """``verdict``: ``unsat``, ``sat`` or ``unknown``; ``counterexample`` (a confirmed
    :class:`cfruntime.results.Counterexample`) for ``sat``; ``stopped``: why an ``unknown`` search ended
    (``"deadline"``, ``"domain limit"``, ``"memory"``, ``"undecided leaf"``, ``"no branching"``,
    ``"unsound bounds"``); ``stats``: ``domains`` (subdomains made and bounded), ``bounded`` (engine rows,
    FSB's candidate children included), ``rounds``, ``max_depth``, ``leaves`` (LPs solved),
    ``seconds`` (the search, after the first attack), ``branching`` per region, ``disjunct_domains``: the
    (subdomain, disjunct) pairs bounded whose disjunct the parent left open -- alpha-beta-CROWN's unit: it
    searches each disjunct of a property (a robustness property's 9 rows) in a tree of its own, so one of
    our subdomains bounding 9 open rows is 9 of its subdomains (:attr:`disjunct_domains_per_second`)."""

    verdict: str
    counterexample: object = None
    stopped: str | None = None
    stats: dict = field(default_factory=dict)

    @property
    def domains_per_second(self) -> float:
        s = self.stats.get("seconds", 0.0)
        return self.stats.get("domains", 0) / s if s > 0 else 0.0

    @property
    def disjunct_domains_per_second(self) -> float:
        """(subdomain, open disjunct) pairs bounded per second: comparable with a per-disjunct search's
        subdomains per second (alpha-beta-CROWN's)."""
        s = self.stats.get("seconds", 0.0)
        return self.stats.get("disjunct_domains", 0) / s if s > 0 else 0.0

    def json(self) -> dict:
        return {"verdict": self.verdict, "stopped": self.stopped, **self.stats,
                "domains_per_second": self.domains_per_second,
                "disjunct_domains_per_second": self.disjunct_domains_per_second}
