"""notebooks/quickstart.ipynb: stored clean, and executed top to bottom on CPU by a kernel of this
interpreter (the install cell skips itself, the configs come from this checkout): a smoke-sized
calibration through library calls, its tables printed, its figures displayed, a prediction made."""

import sys
from pathlib import Path

import pytest

nbformat = pytest.importorskip("nbformat")
nbclient = pytest.importorskip("nbclient")
kernelspec = pytest.importorskip("ipykernel.kernelspec")

NOTEBOOKS = Path(__file__).resolve().parents[1] / "notebooks"
QUICKSTART = NOTEBOOKS / "quickstart.ipynb"


def test_quickstart_is_stored_valid_and_without_outputs():
    notebook = nbformat.read(QUICKSTART, as_version=4)
    nbformat.validate(notebook)
    code = [cell for cell in notebook.cells if cell.cell_type == "code"]
    assert code and all(not cell.outputs and cell.execution_count is None for cell in code)


@pytest.mark.slow
def test_quickstart_runs_a_smoke_calibration(tmp_path, monkeypatch):
    # "python3" must start this interpreter, whatever other kernelspecs the machine has:
    # JUPYTER_PATH comes first in the kernelspec search
    kernelspec.write_kernel_spec(tmp_path / "jupyter" / "kernels" / "python3")
    monkeypatch.setenv("JUPYTER_PATH", str(tmp_path / "jupyter"))
    monkeypatch.setenv("JAX_PLATFORMS", "cpu")
    monkeypatch.setenv("JAXCAP_NOTEBOOK_WORKDIR", str(tmp_path / "run"))
    # JAXCAP_CACHE (the shared compilation cache) is set by conftest.py; the kernel inherits it
    notebook = nbformat.read(QUICKSTART, as_version=4)
    client = nbclient.NotebookClient(
        notebook, timeout=600, kernel_name="python3", resources={"metadata": {"path": str(NOTEBOOKS)}}
    )
    client.execute()  # raises CellExecutionError naming the cell if any cell fails

    outputs = {cell.id: cell.outputs for cell in notebook.cells if cell.cell_type == "code"}
    assert not [o for outs in outputs.values() for o in outs if o.output_type == "error"]

    def text(cell_id: str) -> str:
        return "".join(o.get("text", "") for o in outputs[cell_id] if o.output_type == "stream")

    assert "families: modulo, random_labels" in text("config")
    assert "platform: cpu" in text("devices") and f"Python {sys.version.split()[0]}" in text("devices")
    assert "effective capacity C (bits of random_labels" in text("run")
    assert "modulus bits median" in text("run")  # the per-level table of a family
    (table,) = [o.data["text/markdown"] for o in outputs["report"] if o.output_type == "display_data"]
    assert "## Effective capacity C per architecture" in table and "| architecture |" in table
    assert "![" not in table  # figure links would not resolve from the notebook's folder
    pngs = sorted(p.name for p in (tmp_path / "run" / "report").glob("*.png"))
    assert pngs == ["calibration.png", "capacity.png", "heldout.png", "success_vs_complexity.png"]
    shown = [o for o in outputs["figures"] if o.output_type == "display_data" and "image/png" in o.data]
    assert len(shown) == len(pngs) and text("figures").split() == pngs
    assert text("predict").count("P(learned)") == 3
