"""Process bodies for tests/test_multiprocessing.py (a module of their own, importing only
ndgrad, so spawned children load quickly)."""

import os

import ndgrad


def hogwild_train(rank, model, lock, steps, queue):
    """Each step: SGD on loss = sum(w * (rank + 1)), whose gradient is rank + 1 whatever w is;
    the update is done under ``lock`` so the final weights are exact."""
    opt = ndgrad.optim.SGD(model.parameters(), lr=0.5)
    for _ in range(steps):
        opt.zero_grad()
        loss = (model.weight * (rank + 1)).sum() + model.bias.sum() * 0
        loss.backward()
        with lock:
            opt.step()
    queue.put((rank, model.weight.is_shared(), os.getpid()))


def regress(rank, model, steps, x, y):
    """Ordinary lock-free Hogwild training of a small regression."""
    opt = ndgrad.optim.SGD(model.parameters(), lr=0.05)
    for _ in range(steps):
        opt.zero_grad()
        ((model(x) - y) ** 2).mean().backward()
        opt.step()


def send_new_shared(queue, ready, done):
    """Create a shared tensor here, send it, wait until the parent wrote into it, report."""
    t = ndgrad.zeros(3).share_memory_()
    queue.put(t[1:])
    ready.set()
    done.wait(60)
    queue.put(t.tolist())


def raise_value_error(i):
    if i == 1:
        raise ValueError(f"boom in {i}")


def exit_with_code(i):
    os._exit(3 if i == 0 else 0)


def kill_self(i):
    if i == 1:          # one process only: which of two is reported first is a race
        os.kill(os.getpid(), 9)
