"""gpu_jax_step.py WARMUP STEPS: step time of a jitted JAX training step (MLP 784-1024-1024-10, ReLU, batch 128,
cross-entropy, plain SGD, parameters donated so XLA reuses their buffers), for bench/run_gpu.sh, which runs it in
alternating processes with and without the preload. Each timed step ends with jax.block_until_ready on the new
parameters and the loss; WARMUP steps (the first one compiles) are not timed.

XLA_PYTHON_CLIENT_PREALLOCATE=false (unless already set): with preallocation, JAX sizes its pool as 75% of what
cuMemGetInfo says, and under vramguard that is the quota, not the card, so the two sides would start from pools
of different sizes. Without it, both sides grow the same BFC pool on demand during the warm-up and then run from
it. JAX_PLATFORMS=cuda so that a broken GPU backend fails instead of silently timing the CPU.
Prints "preload 0|1", "info ...", and "figure jax-mlp-step MEDIAN_MS MIN_MS".
Exit status 3 with a "skip REASON" line when jax or its GPU backend is missing.
"""
import os
import sys

from gpu_steps import start, time_steps

os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")
os.environ.setdefault("JAX_PLATFORMS", "cuda")


def main():
    warmup, steps = start()
    try:
        import jax
        import jax.numpy as jnp
    except Exception as e:
        print(f"skip jax not importable ({type(e).__name__}: {e})"[:300], flush=True)
        return 3
    try:
        dev = jax.devices()[0]
    except Exception as e:
        print(f"skip jax: no GPU backend ({type(e).__name__}: {e})"[:300], flush=True)
        return 3
    if dev.platform != "gpu":
        print(f"skip jax: device {dev} is not a GPU", flush=True)
        return 3
    print(f"info jax {jax.__version__} on {dev.device_kind}; XLA_PYTHON_CLIENT_PREALLOCATE="
          f"{os.environ['XLA_PYTHON_CLIENT_PREALLOCATE']}", flush=True)

    sizes, batch = [784, 1024, 1024, 10], 128
    keys = jax.random.split(jax.random.PRNGKey(0), len(sizes) + 1)
    params = [(jax.random.normal(k, (m, n), jnp.float32) * (2.0 / m) ** 0.5, jnp.zeros((n,), jnp.float32))
              for k, m, n in zip(keys, sizes[:-1], sizes[1:])]
    x = jax.random.normal(keys[-2], (batch, sizes[0]), jnp.float32)
    y = jax.random.randint(keys[-1], (batch,), 0, sizes[-1])

    def loss_fn(params, x, y):
        h = x
        for w, b in params[:-1]:
            h = jax.nn.relu(h @ w + b)
        w, b = params[-1]
        logp = jax.nn.log_softmax(h @ w + b)
        return -jnp.mean(jnp.take_along_axis(logp, y[:, None], axis=1))

    def step(params, x, y):
        loss, grads = jax.value_and_grad(loss_fn)(params, x, y)
        return jax.tree_util.tree_map(lambda p, g: p - 0.01 * g, params, grads), loss

    step = jax.jit(step, donate_argnums=0)
    state = [params, None]          # the parameters are donated: each step hands back the ones to use next

    def one_step():
        state[0], state[1] = step(state[0], x, y)

    time_steps("jax-mlp-step", one_step, lambda: jax.block_until_ready(tuple(state)), warmup, steps)
    return 0


if __name__ == "__main__":
    sys.exit(main())
