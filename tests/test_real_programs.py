"""Typical short PyTorch programs, run once with ``import mytorch as torch`` and once with real torch.

Each program below is ordinary PyTorch code written for these tests (tensor basics, autograd, a
module trained with an optimizer, a ``DataLoader`` pipeline, a quickstart-style classifier on
scikit-learn's digits, a word-embedding model, an LSTM sequence tagger, a small CNN script, an
MNIST-style script, a Transformer language model, a bag-of-words text classifier). It takes
the library as its ``torch`` argument and never looks at which one it got. Both runs start from the
same weights (set from a NumPy generator, the way a program loads pretrained values) and the same
data, so their results must agree within float tolerance.
"""
from __future__ import annotations

import io

import numpy as np
import pytest
import torch as real_torch

import mytorch

LIBS = {"mytorch": mytorch, "torch": real_torch}


def _set_weights(torch, model, seed: int) -> None:
    """Give every parameter a value drawn from NumPy: the same numbers in both libraries."""
    rng = np.random.default_rng(seed)
    with torch.no_grad():
        for p in model.parameters():
            bound = 1.0 / np.sqrt(p.shape[-1] if p.dim() > 1 else p.shape[0])
            p.copy_(torch.from_numpy(rng.uniform(-bound, bound, tuple(p.shape)).astype(np.float32)))


def _both(program, **kw):
    mine = program(mytorch, **kw)
    ref = program(real_torch, **kw)
    assert mine.keys() == ref.keys()
    return mine, ref


def _close(mine, ref, rtol=1e-5, atol=1e-6):
    for k in ref:
        np.testing.assert_allclose(np.asarray(mine[k]), np.asarray(ref[k]), rtol=rtol, atol=atol,
                                   err_msg=k)


# ---------------------------------------------------------------- tensor basics
def tensor_basics(torch):
    data = [[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]
    x = torch.tensor(data)
    y = torch.ones_like(x) * 2
    z = torch.arange(6, dtype=torch.float32).reshape(2, 3)
    out = {}
    out["shape"] = list(x.shape) + [x.dtype == torch.float32]
    out["sum"] = (x + y).sum().item()
    out["matmul"] = (x @ z.T).numpy()
    out["elementwise"] = (x * z - y / 4).numpy()
    out["slice"] = x[:, 1].numpy()
    out["last_col"] = x[..., -1].numpy()
    out["cat"] = torch.cat([x, z], dim=1).numpy()
    out["stack"] = list(torch.stack([x, z]).shape)
    out["mean_dim"] = x.mean(dim=0).numpy()
    out["argmax"] = x.argmax(dim=1).numpy()
    out["where"] = torch.where(x > 3, x, torch.zeros_like(x)).numpy()
    out["broadcast"] = (x + torch.tensor([10.0, 20.0, 30.0])).numpy()
    out["bool_mask"] = x[x > 2].numpy()
    t = torch.from_numpy(np.array([1.5, -2.5, 3.25], dtype=np.float32))
    t.add_(1)  # in place
    out["inplace"] = t.numpy()
    out["clamp_exp"] = torch.exp(torch.clamp(t, min=0, max=2)).numpy()
    out["transpose_contig"] = [z.t().is_contiguous(), z.t().contiguous().is_contiguous()]
    out["view"] = z.view(3, 2).numpy()
    out["squeeze"] = list(z.unsqueeze(0).shape) + list(z.unsqueeze(0).squeeze().shape)
    out["int_div"] = (torch.tensor([7, -7]) // 2).numpy()
    out["dtype_promote"] = str((torch.tensor([1, 2]) * 0.5).dtype).split(".")[-1]
    ones = torch.ones(4)                           # the NumPy bridge shares memory both ways
    arr = ones.numpy()
    ones.add_(1)
    shared = torch.from_numpy(arr)
    np.multiply(arr, 3, out=arr)
    out["bridge"] = [arr.tolist(), ones.tolist(), shared.tolist()]
    out["rand_like_shape"] = list(torch.rand_like(x).shape) + [bool((torch.rand(100) < 1).all())]
    return out


def test_tensor_basics():
    mine, ref = _both(tensor_basics)
    assert mine.pop("dtype_promote") == ref.pop("dtype_promote") == "float32"
    _close(mine, ref)


# ---------------------------------------------------------------- autograd
def autograd_basics(torch):
    out = {}
    x = torch.tensor([1.0, -2.0, 3.0], requires_grad=True)
    y = (x ** 2 + 3 * x).sum()
    y.backward()
    out["dy_dx"] = x.grad.numpy()
    # a linear model by hand, updated under no_grad, gradients zeroed between steps
    rng = np.random.default_rng(0)
    inputs = torch.from_numpy(rng.standard_normal((16, 3)).astype(np.float32))
    targets = inputs @ torch.tensor([[2.0], [-1.0], [0.5]]) + 0.3
    w = torch.zeros(3, 1, requires_grad=True)
    b = torch.zeros(1, requires_grad=True)
    for _ in range(20):
        loss = ((inputs @ w + b - targets) ** 2).mean()
        loss.backward()
        with torch.no_grad():
            w -= 0.1 * w.grad
            b -= 0.1 * b.grad
        w.grad.zero_()
        b.grad.zero_()
    out["w"], out["b"], out["loss"] = w.detach().numpy(), b.detach().numpy(), loss.item()
    # a graph used twice, then detached pieces and torch.autograd.grad
    a = torch.tensor(2.0, requires_grad=True)
    c = a * a
    (g,) = torch.autograd.grad(c * torch.sin(a), a, create_graph=True)
    (g2,) = torch.autograd.grad(g, a)
    out["grad"], out["grad2"] = g.item(), g2.item()
    out["detached"] = [c.detach().requires_grad, c.requires_grad]
    # a vector-Jacobian product: backward of a non-scalar output with a gradient argument
    v = torch.tensor([0.1, 1.0, 0.0001])
    x2 = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
    y2 = x2 * 2
    while y2.norm() < 100:
        y2 = y2 * 2
    y2.backward(v)
    out["vjp"] = x2.grad.numpy()
    with torch.no_grad():
        out["no_grad"] = (x2 * 2).requires_grad
    return out


def test_autograd_program():
    mine, ref = _both(autograd_basics)
    _close(mine, ref)


# ---------------------------------------------------------------- nn.Module + optim
def fit_curve(torch, optimizer_name):
    nn = torch.nn

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.hidden = nn.Linear(1, 16)
            self.out = nn.Linear(16, 1)

        def forward(self, x):
            return self.out(torch.tanh(self.hidden(x)))

    model = Net()
    _set_weights(torch, model, 1)
    xs = torch.linspace(-1, 1, 32).unsqueeze(1)
    ys = xs ** 3 - 0.5 * xs
    if optimizer_name == "sgd":
        opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    else:
        opt = torch.optim.Adam(model.parameters(), lr=0.01, weight_decay=1e-4)
    sched = torch.optim.lr_scheduler.StepLR(opt, step_size=10, gamma=0.5)
    loss_fn = nn.MSELoss()
    losses = []
    for _ in range(30):
        opt.zero_grad()
        loss = loss_fn(model(xs), ys)
        loss.backward()
        opt.step()
        sched.step()
        losses.append(loss.item())
    state = {k: v.numpy() for k, v in model.state_dict().items()}
    return {"losses": losses, **state, "lr": sched.get_last_lr()}


@pytest.mark.parametrize("optimizer_name", ["sgd", "adam"])
def test_module_training_loop(optimizer_name):
    mine, ref = _both(fit_curve, optimizer_name=optimizer_name)
    _close(mine, ref, rtol=1e-4, atol=1e-5)


# ---------------------------------------------------------------- Dataset / DataLoader
def data_pipeline(torch):
    from_data = torch.utils.data

    class Squares(from_data.Dataset):
        def __init__(self, n):
            self.x = torch.arange(n, dtype=torch.float32) / n

        def __len__(self):
            return len(self.x)

        def __getitem__(self, i):
            return {"x": self.x[i].unsqueeze(0), "y": self.x[i] ** 2}

    loader = from_data.DataLoader(Squares(20), batch_size=6, shuffle=False)
    shapes = [(tuple(batch["x"].shape), tuple(batch["y"].shape)) for batch in loader]
    tensors = from_data.TensorDataset(torch.arange(10.0).reshape(5, 2), torch.tensor([0, 1, 0, 1, 1]))
    pairs = [(xb.numpy().tolist(), yb.numpy().tolist())
             for xb, yb in from_data.DataLoader(tensors, batch_size=2, drop_last=True)]
    workers = [xb.numpy().tolist() for xb, _ in
               from_data.DataLoader(tensors, batch_size=2, num_workers=2, persistent_workers=False)]
    split = from_data.random_split(range(10), [7, 3], generator=torch.Generator().manual_seed(0))
    model = torch.nn.Linear(1, 1)
    _set_weights(torch, model, 2)
    opt = torch.optim.SGD(model.parameters(), lr=0.5)
    for _ in range(3):
        for batch in loader:
            opt.zero_grad()
            loss = torch.nn.functional.mse_loss(model(batch["x"]).squeeze(1), batch["y"])
            loss.backward()
            opt.step()
    return {"n_batches": len(loader), "shapes": shapes, "pairs": pairs, "workers": workers,
            "split_sizes": [len(s) for s in split], "weight": model.weight.detach().numpy(),
            "loss": loss.item()}


def test_data_pipeline():
    mine, ref = _both(data_pipeline)
    assert mine["shapes"] == ref["shapes"] and mine["pairs"] == ref["pairs"]
    assert mine["workers"] == ref["workers"]  # two worker processes, batches still in order
    _close({k: mine[k] for k in ("n_batches", "split_sizes", "weight", "loss")},
           {k: ref[k] for k in ("n_batches", "split_sizes", "weight", "loss")})


# ---------------------------------------------------------------- quickstart-style classifier
@pytest.fixture(scope="module")
def digits():
    from sklearn.datasets import load_digits
    d = load_digits()
    x = (d.images[:400] / 16.0).astype(np.float32)
    return x, d.target[:400].astype(np.int64)


def quickstart_classifier(torch, images, labels):
    nn = torch.nn
    DataLoader, TensorDataset = torch.utils.data.DataLoader, torch.utils.data.TensorDataset
    train = TensorDataset(torch.from_numpy(images[:320]), torch.from_numpy(labels[:320]))
    test = TensorDataset(torch.from_numpy(images[320:]), torch.from_numpy(labels[320:]))
    train_loader = DataLoader(train, batch_size=32)
    test_loader = DataLoader(test, batch_size=40)

    class NeuralNetwork(nn.Module):
        def __init__(self):
            super().__init__()
            self.flatten = nn.Flatten()
            self.stack = nn.Sequential(nn.Linear(64, 32), nn.ReLU(), nn.Linear(32, 10))

        def forward(self, x):
            return self.stack(self.flatten(x))

    model = NeuralNetwork()
    _set_weights(torch, model, 3)
    loss_fn = nn.CrossEntropyLoss()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.2)
    train_losses = []
    for _ in range(2):
        model.train()
        for xb, yb in train_loader:
            loss = loss_fn(model(xb), yb)
            loss.backward()
            optimizer.step()
            optimizer.zero_grad()
            train_losses.append(loss.item())
    model.eval()
    correct, test_loss = 0, 0.0
    with torch.no_grad():
        for xb, yb in test_loader:
            pred = model(xb)
            test_loss += loss_fn(pred, yb).item()
            correct += (pred.argmax(1) == yb).type(torch.float).sum().item()
    buffer = io.BytesIO()  # save the weights, load them into a fresh model: same predictions
    torch.save(model.state_dict(), buffer)
    buffer.seek(0)
    reloaded = NeuralNetwork()
    reloaded.load_state_dict(torch.load(buffer, weights_only=True))
    reloaded.eval()
    same = bool(torch.equal(reloaded(test[:][0]), model(test[:][0])))
    return {"train_losses": train_losses, "test_loss": test_loss / len(test_loader),
            "accuracy": correct / len(test), "reloaded_same": same}


def test_quickstart_classifier(digits):
    images, labels = digits
    mine, ref = _both(quickstart_classifier, images=images, labels=labels)
    _close(mine, ref, rtol=1e-4, atol=1e-5)
    assert ref["accuracy"] > 0.5 and mine["reloaded_same"]  # it learned; the checkpoint reloads


# ---------------------------------------------------------------- small CNN script
def cnn_script(torch, images, labels):
    nn, F = torch.nn, torch.nn.functional

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv1 = nn.Conv2d(1, 4, 3, padding=1)
            self.conv2 = nn.Conv2d(4, 8, 3)
            self.dropout = nn.Dropout(0.25)
            self.bn = nn.BatchNorm2d(8)
            self.fc = nn.Linear(8 * 2 * 2, 10)

        def forward(self, x):
            x = F.relu(self.conv1(x))
            x = F.max_pool2d(x, 2)
            x = F.relu(self.bn(self.conv2(x)))
            x = F.avg_pool2d(x, 1)
            x = torch.flatten(x, 1)
            return F.log_softmax(self.fc(x), dim=1)

    model = Net()
    _set_weights(torch, model, 4)
    model.dropout.p = 0.0  # dropout draws random masks: off so both runs are comparable
    x = torch.from_numpy(images[:64]).unsqueeze(1)
    y = torch.from_numpy(labels[:64])
    optimizer = torch.optim.Adadelta(model.parameters(), lr=1.0)
    losses = []
    for step in range(4):
        optimizer.zero_grad()
        loss = F.nll_loss(model(x[step * 16:(step + 1) * 16]), y[step * 16:(step + 1) * 16])
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    model.eval()
    with torch.no_grad():
        out = model(x)
    return {"losses": losses, "eval_out": out.numpy(),
            "running_mean": model.bn.running_mean.numpy(), "running_var": model.bn.running_var.numpy()}


def test_cnn_script(digits):
    images, labels = digits
    mine, ref = _both(cnn_script, images=images, labels=labels)
    _close(mine, ref, rtol=1e-4, atol=1e-4)


# ---------------------------------------------------------------- word embeddings (n-gram model)
TEXT = """the cat sat on the mat and the dog sat on the rug while the cat watched the dog
and the dog watched the cat sit on the mat""".split()


def ngram_embeddings(torch):
    nn, F = torch.nn, torch.nn.functional
    context_size, dim = 2, 8
    vocab = sorted(set(TEXT))
    word_to_ix = {w: i for i, w in enumerate(vocab)}
    ngrams = [([TEXT[i - j - 1] for j in range(context_size)], TEXT[i])
              for i in range(context_size, len(TEXT))]

    class NGramLanguageModeler(nn.Module):
        def __init__(self, vocab_size, embedding_dim, context_size):
            super().__init__()
            self.embeddings = nn.Embedding(vocab_size, embedding_dim)
            self.linear1 = nn.Linear(context_size * embedding_dim, 32)
            self.linear2 = nn.Linear(32, vocab_size)

        def forward(self, inputs):
            embeds = self.embeddings(inputs).view((1, -1))
            out = F.relu(self.linear1(embeds))
            return F.log_softmax(self.linear2(out), dim=1)

    model = NGramLanguageModeler(len(vocab), dim, context_size)
    _set_weights(torch, model, 5)
    loss_function = nn.NLLLoss()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
    losses = []
    for _ in range(3):
        total = 0.0
        for context, target in ngrams:
            context_idxs = torch.tensor([word_to_ix[w] for w in context], dtype=torch.long)
            model.zero_grad()
            log_probs = model(context_idxs)
            loss = loss_function(log_probs, torch.tensor([word_to_ix[target]], dtype=torch.long))
            loss.backward()
            optimizer.step()
            total += loss.item()
        losses.append(total)
    cat = model.embeddings.weight[word_to_ix["cat"]]
    dog = model.embeddings.weight[word_to_ix["dog"]]
    similarity = F.cosine_similarity(cat.unsqueeze(0), dog.unsqueeze(0)).item()
    return {"losses": losses, "embedding": model.embeddings.weight.detach().numpy(),
            "similarity": similarity}


def test_word_embeddings():
    mine, ref = _both(ngram_embeddings)
    _close(mine, ref, rtol=1e-4, atol=1e-5)


# ---------------------------------------------------------------- LSTM sequence tagger
TAGGED = [("the dog ate the apple".split(), ["DET", "NN", "V", "DET", "NN"]),
          ("everybody read that book".split(), ["NN", "V", "DET", "NN"]),
          ("that dog read the book".split(), ["DET", "NN", "V", "DET", "NN"])]


def lstm_tagger(torch):
    nn, F = torch.nn, torch.nn.functional
    word_to_ix = {}
    for sent, _ in TAGGED:
        for w in sent:
            word_to_ix.setdefault(w, len(word_to_ix))
    tag_to_ix = {"DET": 0, "NN": 1, "V": 2}

    def prepare(seq, to_ix):
        return torch.tensor([to_ix[w] for w in seq], dtype=torch.long)

    class LSTMTagger(nn.Module):
        def __init__(self, embedding_dim, hidden_dim, vocab_size, tagset_size):
            super().__init__()
            self.word_embeddings = nn.Embedding(vocab_size, embedding_dim)
            self.lstm = nn.LSTM(embedding_dim, hidden_dim)
            self.hidden2tag = nn.Linear(hidden_dim, tagset_size)

        def forward(self, sentence):
            embeds = self.word_embeddings(sentence)
            lstm_out, _ = self.lstm(embeds.view(len(sentence), 1, -1))
            tag_space = self.hidden2tag(lstm_out.view(len(sentence), -1))
            return F.log_softmax(tag_space, dim=1)

    model = LSTMTagger(6, 6, len(word_to_ix), len(tag_to_ix))
    _set_weights(torch, model, 6)
    loss_function = nn.NLLLoss()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    with torch.no_grad():
        before = model(prepare(TAGGED[0][0], word_to_ix)).numpy()
    for _ in range(5):
        for sentence, tags in TAGGED:
            model.zero_grad()
            loss = loss_function(model(prepare(sentence, word_to_ix)), prepare(tags, tag_to_ix))
            loss.backward()
            optimizer.step()
    with torch.no_grad():
        after = model(prepare(TAGGED[0][0], word_to_ix))
    # the batched, batch_first form with packed sequences of two lengths
    lstm = nn.LSTM(6, 4, batch_first=True, bidirectional=True)
    _set_weights(torch, lstm, 7)
    emb = model.word_embeddings(torch.tensor([[0, 1, 2, 3, 4], [5, 6, 7, 2, 0]])).detach()
    packed = nn.utils.rnn.pack_padded_sequence(emb, torch.tensor([5, 4]), batch_first=True)
    out, (h, c) = lstm(packed)
    padded, lengths = nn.utils.rnn.pad_packed_sequence(out, batch_first=True)
    return {"before": before, "after": after.numpy(), "tags": after.argmax(1).numpy(),
            "loss": loss.item(), "packed_out": padded.detach().numpy(), "h": h.detach().numpy(),
            "lengths": lengths.numpy()}


def test_lstm_tagger():
    mine, ref = _both(lstm_tagger)
    _close(mine, ref, rtol=1e-4, atol=1e-5)


# ---------------------------------------------------------------- an MNIST-style script: train() and test()
def mnist_style_script(torch, images, labels, dropout):
    nn, F = torch.nn, torch.nn.functional
    from_data = torch.utils.data

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv1 = nn.Conv2d(1, 6, 3, 1)
            self.conv2 = nn.Conv2d(6, 12, 3, 1)
            self.dropout1 = nn.Dropout2d(dropout)
            self.fc1 = nn.Linear(12 * 2 * 2, 32)
            self.fc2 = nn.Linear(32, 10)

        def forward(self, x):
            x = F.relu(self.conv1(x))
            x = F.max_pool2d(F.relu(self.conv2(x)), 2)
            x = self.dropout1(x)
            x = torch.flatten(x, 1)
            x = F.relu(self.fc1(x))
            return F.log_softmax(self.fc2(x), dim=1)

    def train(model, loader, optimizer, log):
        model.train()
        for batch_idx, (data, target) in enumerate(loader):
            optimizer.zero_grad()
            loss = F.nll_loss(model(data), target)
            loss.backward()
            optimizer.step()
            if batch_idx % 2 == 0:
                log.append(loss.item())

    def test(model, loader):
        model.eval()
        test_loss, correct = 0.0, 0
        with torch.no_grad():
            for data, target in loader:
                output = model(data)
                test_loss += F.nll_loss(output, target, reduction="sum").item()
                pred = output.argmax(dim=1, keepdim=True)
                correct += pred.eq(target.view_as(pred)).sum().item()
        return test_loss / len(loader.dataset), correct

    x = torch.from_numpy(images).unsqueeze(1)
    x = (x - x.mean()) / x.std()                 # normalise with the data's own statistics
    y = torch.from_numpy(labels)
    train_set = from_data.TensorDataset(x[:256], y[:256])
    test_set = from_data.Subset(from_data.TensorDataset(x, y), list(range(256, 384)))
    train_loader = from_data.DataLoader(train_set, batch_size=64)
    test_loader = from_data.DataLoader(test_set, batch_size=128)
    model = Net()
    _set_weights(torch, model, 8)
    optimizer = torch.optim.Adadelta(model.parameters(), lr=1.0)
    scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=1, gamma=0.7)
    log, results = [], []
    for _ in range(2):
        train(model, train_loader, optimizer, log)
        results.append(test(model, test_loader))
        scheduler.step()
    return {"log": log, "test_loss": [r[0] for r in results], "correct": [r[1] for r in results],
            "lr": scheduler.get_last_lr()}


def test_mnist_style_script(digits):
    images, labels = digits
    mine, ref = _both(mnist_style_script, images=images, labels=labels, dropout=0.0)
    _close(mine, ref, rtol=1e-4, atol=1e-5)
    # with dropout on, the masks differ between the libraries, but the script still runs and learns
    noisy = mnist_style_script(mytorch, images, labels, dropout=0.25)
    assert noisy["test_loss"][-1] < np.log(10)


# ---------------------------------------------------------------- a small Transformer language model
def transformer_lm(torch):
    nn, F = torch.nn, torch.nn.functional
    vocab = sorted(set(TEXT))
    ids = torch.tensor([vocab.index(w) for w in TEXT])
    seq_len, d_model = 6, 16

    class PositionalEncoding(nn.Module):
        def __init__(self, d_model, max_len=64):
            super().__init__()
            position = torch.arange(max_len).unsqueeze(1)
            div_term = torch.exp(torch.arange(0, d_model, 2) * (-np.log(10000.0) / d_model))
            pe = torch.zeros(max_len, 1, d_model)
            pe[:, 0, 0::2] = torch.sin(position * div_term)
            pe[:, 0, 1::2] = torch.cos(position * div_term)
            self.register_buffer("pe", pe)

        def forward(self, x):
            return x + self.pe[:x.size(0)]

    class TransformerModel(nn.Module):
        def __init__(self, ntoken):
            super().__init__()
            self.embedding = nn.Embedding(ntoken, d_model)
            self.pos = PositionalEncoding(d_model)
            layer = nn.TransformerEncoderLayer(d_model, nhead=2, dim_feedforward=32, dropout=0.0)
            self.encoder = nn.TransformerEncoder(layer, num_layers=2, enable_nested_tensor=False)
            self.linear = nn.Linear(d_model, ntoken)

        def forward(self, src, src_mask):
            x = self.pos(self.embedding(src) * np.sqrt(d_model))
            return self.linear(self.encoder(x, src_mask))

    model = TransformerModel(len(vocab))
    _set_weights(torch, model, 9)
    mask = nn.Transformer.generate_square_subsequent_mask(seq_len)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.5)
    losses = []
    for i in range(0, len(ids) - seq_len - 1, seq_len):
        data = ids[i:i + seq_len].unsqueeze(1)
        target = ids[i + 1:i + 1 + seq_len]
        output = model(data, mask)
        loss = F.cross_entropy(output.view(-1, len(vocab)), target)
        optimizer.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 0.5)
        optimizer.step()
        losses.append(loss.item())
    return {"losses": losses, "mask": mask.numpy()}


def test_transformer_language_model():
    mine, ref = _both(transformer_lm)
    _close(mine, ref, rtol=1e-4, atol=1e-5)


# ---------------------------------------------------------------- a bag-of-words text classifier
NEWS = [(0, "the team won the match in the final minute"), (1, "shares fell as the market closed lower"),
        (0, "the coach praised the players after the game"), (1, "the bank raised interest rates again"),
        (0, "a late goal won the cup for the home team"), (1, "investors sold shares after weak profits")]


def text_classifier(torch):
    nn = torch.nn
    vocab = {w: i for i, w in enumerate(sorted({w for _, t in NEWS for w in t.split()}))}

    def collate_batch(batch):
        label_list, text_list, offsets = [], [], [0]
        for label, text in batch:
            label_list.append(label)
            ids = torch.tensor([vocab[w] for w in text.split()], dtype=torch.int64)
            text_list.append(ids)
            offsets.append(ids.size(0))
        offsets = torch.tensor(offsets[:-1]).cumsum(dim=0)
        return torch.tensor(label_list, dtype=torch.int64), torch.cat(text_list), offsets

    class TextClassificationModel(nn.Module):
        def __init__(self, vocab_size, embed_dim, num_class):
            super().__init__()
            self.embedding = nn.EmbeddingBag(vocab_size, embed_dim)
            self.fc = nn.Linear(embed_dim, num_class)

        def forward(self, text, offsets):
            return self.fc(self.embedding(text, offsets))

    model = TextClassificationModel(len(vocab), 8, 2)
    _set_weights(torch, model, 10)
    loader = torch.utils.data.DataLoader(NEWS, batch_size=3, collate_fn=collate_batch)
    criterion = nn.CrossEntropyLoss()
    optimizer = torch.optim.SGD(model.parameters(), lr=2.0)
    scheduler = torch.optim.lr_scheduler.StepLR(optimizer, 1, gamma=0.5)
    losses = []
    for _ in range(4):
        model.train()
        for label, text, offsets in loader:
            optimizer.zero_grad()
            loss = criterion(model(text, offsets), label)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 0.1)
            optimizer.step()
            losses.append(loss.item())
        scheduler.step()
    model.eval()
    with torch.no_grad():
        _, text, offsets = collate_batch(NEWS)
        predicted = model(text, offsets).argmax(1)
    return {"losses": losses, "predicted": predicted.numpy()}


def test_text_classifier():
    mine, ref = _both(text_classifier)
    _close(mine, ref, rtol=1e-4, atol=1e-5)
