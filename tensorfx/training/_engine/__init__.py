"""The engine: what turns a ModelBuilder's hooks into steps and loops.

The user writes hooks (`ModelBuilder`); the trainer owns this engine, which
calls them: variables are created once (`variables`), the training step is
traced (`train_step`) and run by a loop for the strategy at hand
(`local_loop` for one device or mirrored replicas, `ps_loop` for parameter
servers), evaluation has its own graph (`evaluation_graph`) and the
exported model its serving signatures (`serving`). `graphs` assembles the
three interfaces the trainer drives.

The engine keeps its own state (the strategy, the global step, the
optimizer, the evaluation metrics, the gradient accumulator, the loss
scale) in an `EngineState` (`tensorfx.training._state`), passed to every
function here that needs it; the builder reaches the engine only through
that state's entry points. The default `build_input` is the engine's input
policy (`input`).
"""
