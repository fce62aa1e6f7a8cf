"""Neural style transfer after the official tutorial, shrunk: a small random conv feature
extractor stands in for VGG; ContentLoss/StyleLoss modules inserted into an nn.Sequential that
is rebuilt layer by layer, gram matrices via mm of views (and bmm for a batch), a Normalization
module, LBFGS on the input image with a closure and strong-Wolfe line search, clamp_ under
no_grad."""

import copy

import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.optim as optim

torch.manual_seed(7)
imsize = 16


def make_image(kind):
    t = torch.linspace(-1, 1, imsize)
    yy, xx = torch.meshgrid(t, t, indexing="ij")
    if kind == "content":
        r = ((xx ** 2 + yy ** 2) < 0.4).float()
        img = torch.stack([r, 0.5 * r + 0.2, 1 - r])
    else:
        img = torch.stack([(torch.sin(6 * xx) + 1) / 2, (torch.cos(5 * yy) + 1) / 2,
                           (torch.sin(4 * (xx + yy)) + 1) / 2])
    return img.unsqueeze(0)


content_img = make_image("content")
style_img = make_image("style")
assert style_img.size() == content_img.size(), "style and content images must be the same size"


class ContentLoss(nn.Module):
    def __init__(self, target):
        super().__init__()
        self.target = target.detach()

    def forward(self, input):
        self.loss = F.mse_loss(input, self.target)
        return input


def gram_matrix(input):
    a, b, c, d = input.size()
    features = input.view(a * b, c * d)
    G = torch.mm(features, features.t())
    return G.div(a * b * c * d)


def gram_matrix_batched(x):
    b, ch, h, w = x.shape
    f = x.reshape(b, ch, h * w)
    return torch.bmm(f, f.transpose(1, 2)) / (ch * h * w)


class StyleLoss(nn.Module):
    def __init__(self, target_feature):
        super().__init__()
        self.target = gram_matrix(target_feature).detach()

    def forward(self, input):
        G = gram_matrix(input)
        self.loss = F.mse_loss(G, self.target)
        return input


class Normalization(nn.Module):
    def __init__(self, mean, std):
        super().__init__()
        self.mean = torch.tensor(mean).view(-1, 1, 1)
        self.std = torch.tensor(std).view(-1, 1, 1)

    def forward(self, img):
        return (img - self.mean) / self.std


# a tiny "pretrained" feature net standing in for vgg19.features
cnn = nn.Sequential(
    nn.Conv2d(3, 8, 3, padding=1), nn.ReLU(inplace=True),
    nn.Conv2d(8, 8, 3, padding=1), nn.ReLU(inplace=True), nn.MaxPool2d(2, 2),
    nn.Conv2d(8, 16, 3, padding=1), nn.ReLU(inplace=True),
    nn.Conv2d(16, 16, 3, padding=1), nn.ReLU(inplace=True),
).eval()
cnn_normalization_mean = [0.485, 0.456, 0.406]
cnn_normalization_std = [0.229, 0.224, 0.225]
content_layers_default = ['conv_4']
style_layers_default = ['conv_1', 'conv_2', 'conv_3', 'conv_4']


def get_style_model_and_losses(cnn, normalization_mean, normalization_std, style_img,
                               content_img, content_layers=content_layers_default,
                               style_layers=style_layers_default):
    normalization = Normalization(normalization_mean, normalization_std)
    content_losses = []
    style_losses = []
    model = nn.Sequential(normalization)
    i = 0
    for layer in cnn.children():
        if isinstance(layer, nn.Conv2d):
            i += 1
            name = f'conv_{i}'
        elif isinstance(layer, nn.ReLU):
            name = f'relu_{i}'
            layer = nn.ReLU(inplace=False)
        elif isinstance(layer, nn.MaxPool2d):
            name = f'pool_{i}'
        else:
            raise RuntimeError(f'Unrecognized layer: {layer.__class__.__name__}')
        model.add_module(name, layer)
        if name in content_layers:
            target = model(content_img).detach()
            content_loss = ContentLoss(target)
            model.add_module(f"content_loss_{i}", content_loss)
            content_losses.append(content_loss)
        if name in style_layers:
            target_feature = model(style_img).detach()
            style_loss = StyleLoss(target_feature)
            model.add_module(f"style_loss_{i}", style_loss)
            style_losses.append(style_loss)
    for i in range(len(model) - 1, -1, -1):
        if isinstance(model[i], ContentLoss) or isinstance(model[i], StyleLoss):
            break
    model = model[:(i + 1)]
    return model, style_losses, content_losses


def run_style_transfer(cnn, normalization_mean, normalization_std, content_img, style_img,
                       input_img, num_steps=30, style_weight=100000, content_weight=1):
    model, style_losses, content_losses = get_style_model_and_losses(
        cnn, normalization_mean, normalization_std, style_img, content_img)
    input_img.requires_grad_(True)
    model.eval()
    model.requires_grad_(False)
    optimizer = optim.LBFGS([input_img], max_iter=10, line_search_fn="strong_wolfe")
    print([name for name, _ in model.named_children()])
    run = [0]
    while run[0] <= num_steps:
        def closure():
            with torch.no_grad():
                input_img.clamp_(0, 1)
            optimizer.zero_grad()
            model(input_img)
            style_score = 0
            content_score = 0
            for sl in style_losses:
                style_score += sl.loss
            for cl in content_losses:
                content_score += cl.loss
            style_score *= style_weight
            content_score *= content_weight
            loss = style_score + content_score
            loss.backward()
            run[0] += 1
            if run[0] % 10 == 0:
                print(f"run {run[0]}: Style Loss : {style_score.item():.4f} "
                      f"Content Loss: {content_score.item():.4f}")
            return style_score + content_score
        optimizer.step(closure)
    with torch.no_grad():
        input_img.clamp_(0, 1)
    return input_img


input_img = content_img.clone()
output = run_style_transfer(cnn, cnn_normalization_mean, cnn_normalization_std,
                            content_img, style_img, input_img)
print(output.shape, output.requires_grad, output.is_leaf, round(output.mean().item(), 4))
print("in range", bool(((output >= 0) & (output <= 1)).all()))
feats = cnn[:4](torch.cat([content_img, style_img, output.detach()]))
g = gram_matrix_batched(feats)
print("gram", g.shape, torch.allclose(g[1], gram_matrix(feats[1:2]) * 1, atol=1e-6),
      round(g.diagonal(dim1=1, dim2=2).sum(-1)[2].item(), 4))
copied = copy.deepcopy(cnn)
print("deepcopy", all(torch.equal(a, b) for a, b in zip(copied.parameters(), cnn.parameters())))
