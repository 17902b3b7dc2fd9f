"""converter/reference.py's pieces that no external model covers (the
fast-transformers fixtures and the authors' image model have no depthwise
convolution and no frame stacking), each against PyTorch's own operator or
a loop written here: the goldens of the speech cases rest on them."""

import torch
import torch.nn.functional as F

from converter.reference import CausalDepthwiseConv, LinearTransformer, ModelConfig


def test_causal_depthwise_conv_is_torchs_grouped_conv1d():
    torch.manual_seed(0)
    for d, kernel, t in ((5, 1, 9), (16, 3, 40), (144, 7, 33)):
        conv = CausalDepthwiseConv(d, kernel)
        with torch.no_grad():
            conv.bias.normal_()
        x = torch.randn(2, t, d, dtype=torch.float32)
        ours = conv(x)
        # conv1d over [B, d, T] with k - 1 zeros of padding on both sides;
        # the first T outputs are the causal ones.
        theirs = F.conv1d(x.transpose(1, 2), conv.weight.unsqueeze(1), conv.bias, padding=kernel - 1, groups=d)
        torch.testing.assert_close(ours, theirs[..., :t].transpose(1, 2), rtol=1e-5, atol=1e-5)
        # The step form gives the same outputs from its history.
        history = torch.zeros(2, kernel - 1, d)
        with torch.no_grad():
            stepped = torch.stack([conv.step(x[:, i], history) for i in range(t)], dim=1)
        torch.testing.assert_close(stepped, ours.detach(), rtol=1e-5, atol=1e-5)


def test_stack_frames_takes_each_steps_frames_oldest_first():
    config = ModelConfig(input_kind="frames", input_dim=3, stack_window=4, stack_hop=2, d_model=8,
                         num_heads=2, d_key=4, d_value=4, d_ff=8, num_layers=1)
    model = LinearTransformer(config)
    frames = torch.arange(2 * 11 * 3, dtype=torch.float32).reshape(2, 11, 3)
    stacked = model.stack_frames(frames)
    steps = (11 - 4) // 2 + 1
    assert stacked.shape == (2, steps, 4 * 3)
    for b in range(2):
        for s in range(steps):
            expected = torch.cat([frames[b, s * 2 + w] for w in range(4)])
            assert torch.equal(stacked[b, s], expected), (b, s)
