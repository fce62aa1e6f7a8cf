"""DQN the way the official "Reinforcement Learning (DQN) Tutorial" writes it, on a toy
grid-walk environment written in Python: a ReplayMemory of namedtuple Transitions with
random.sample, policy and target nets, epsilon-greedy with an exponential decay, gather on the
taken actions, ``max(1).values`` of the target net on non-final next states, SmoothL1Loss,
clip_grad_value_, AdamW with amsgrad and a soft target update through state_dict arithmetic."""

import math
import random
from collections import deque, namedtuple
from itertools import count

import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.optim as optim

random.seed(0)
torch.manual_seed(0)

Transition = namedtuple('Transition', ('state', 'action', 'next_state', 'reward'))


class ReplayMemory:
    def __init__(self, capacity):
        self.memory = deque([], maxlen=capacity)

    def push(self, *args):
        """Save a transition"""
        self.memory.append(Transition(*args))

    def sample(self, batch_size):
        return random.sample(self.memory, batch_size)

    def __len__(self):
        return len(self.memory)


class LineWorld:
    """Walk on 0..6 from the middle; +1 at the right end, -1 at the left end, 0.01 per step."""
    n = 7

    def reset(self):
        self.pos = 3
        self.t = 0
        return self.obs(), {}

    def obs(self):
        o = [0.0] * self.n
        o[self.pos] = 1.0
        return o + [self.t / 20.0]

    def step(self, action):
        self.pos += 1 if action == 1 else -1
        self.t += 1
        terminated = self.pos in (0, self.n - 1)
        reward = 1.0 if self.pos == self.n - 1 else (-1.0 if self.pos == 0 else -0.01)
        truncated = self.t >= 20
        return self.obs(), reward, terminated, truncated, {}


class DQN(nn.Module):
    def __init__(self, n_observations, n_actions):
        super().__init__()
        self.layer1 = nn.Linear(n_observations, 32)
        self.layer2 = nn.Linear(32, 32)
        self.layer3 = nn.Linear(32, n_actions)

    def forward(self, x):
        x = F.relu(self.layer1(x))
        x = F.relu(self.layer2(x))
        return self.layer3(x)


BATCH_SIZE = 16
GAMMA = 0.9
EPS_START = 0.9
EPS_END = 0.05
EPS_DECAY = 100
TAU = 0.05
LR = 1e-3

env = LineWorld()
n_actions = 2
state, info = env.reset()
n_observations = len(state)
policy_net = DQN(n_observations, n_actions)
target_net = DQN(n_observations, n_actions)
target_net.load_state_dict(policy_net.state_dict())
optimizer = optim.AdamW(policy_net.parameters(), lr=LR, amsgrad=True)
memory = ReplayMemory(500)
steps_done = 0


def select_action(state):
    global steps_done
    sample = random.random()
    eps_threshold = EPS_END + (EPS_START - EPS_END) * math.exp(-1. * steps_done / EPS_DECAY)
    steps_done += 1
    if sample > eps_threshold:
        with torch.no_grad():
            return policy_net(state).max(1).indices.view(1, 1)
    else:
        return torch.tensor([[random.randrange(n_actions)]], dtype=torch.long)


def optimize_model():
    if len(memory) < BATCH_SIZE:
        return None
    transitions = memory.sample(BATCH_SIZE)
    batch = Transition(*zip(*transitions))
    non_final_mask = torch.tensor(tuple(map(lambda s: s is not None, batch.next_state)),
                                  dtype=torch.bool)
    non_final_next_states = torch.cat([s for s in batch.next_state if s is not None])
    state_batch = torch.cat(batch.state)
    action_batch = torch.cat(batch.action)
    reward_batch = torch.cat(batch.reward)
    state_action_values = policy_net(state_batch).gather(1, action_batch)
    next_state_values = torch.zeros(BATCH_SIZE)
    with torch.no_grad():
        next_state_values[non_final_mask] = target_net(non_final_next_states).max(1).values
    expected_state_action_values = (next_state_values * GAMMA) + reward_batch
    criterion = nn.SmoothL1Loss()
    loss = criterion(state_action_values, expected_state_action_values.unsqueeze(1))
    optimizer.zero_grad()
    loss.backward()
    torch.nn.utils.clip_grad_value_(policy_net.parameters(), 100)
    optimizer.step()
    return loss.item()


episode_durations = []
returns = []
num_episodes = 30
for i_episode in range(num_episodes):
    state, info = env.reset()
    state = torch.tensor(state, dtype=torch.float32).unsqueeze(0)
    ret = 0.0
    losses = []
    for t in count():
        action = select_action(state)
        observation, reward, terminated, truncated, _ = env.step(action.item())
        ret += reward
        reward = torch.tensor([reward])
        done = terminated or truncated
        if terminated:
            next_state = None
        else:
            next_state = torch.tensor(observation, dtype=torch.float32).unsqueeze(0)
        memory.push(state, action, next_state, reward)
        state = next_state
        loss = optimize_model()
        if loss is not None:
            losses.append(loss)
        # soft update of the target network's weights: θ′ ← τ θ + (1 −τ )θ′
        target_net_state_dict = target_net.state_dict()
        policy_net_state_dict = policy_net.state_dict()
        for key in policy_net_state_dict:
            target_net_state_dict[key] = (policy_net_state_dict[key] * TAU
                                          + target_net_state_dict[key] * (1 - TAU))
        target_net.load_state_dict(target_net_state_dict)
        if done:
            episode_durations.append(t + 1)
            returns.append(ret)
            break
    if i_episode % 5 == 4:
        mean_loss = sum(losses) / max(len(losses), 1)
        print(f"episode {i_episode + 1}: duration {episode_durations[-1]} return {ret:.2f} "
              f"mean loss {mean_loss:.5f} steps {steps_done}")

durations_t = torch.tensor(episode_durations, dtype=torch.float)
means = durations_t.unfold(0, 10, 1).mean(1).view(-1)
print("100-ep style moving mean", [round(m, 3) for m in means.tolist()[::5]])

# the other common soft-update spelling, on parameters' .data
for p_t, p in zip(target_net.parameters(), policy_net.parameters()):
    p_t.data.copy_(TAU * p.data + (1 - TAU) * p_t.data)
with torch.no_grad():
    probe = torch.eye(n_observations)[:env.n]
    q = policy_net(probe)
    print("greedy policy", q.argmax(1).tolist(),
          "max Q", [round(v, 4) for v in q.max(1).values.tolist()])
    print("target Q", [round(v, 4) for v in target_net(probe).max(dim=1)[0].tolist()])
print("memory", len(memory), type(memory.memory[0]).__name__, memory.memory[0].action.dtype)
