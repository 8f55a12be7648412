"""ament_python packaging for dynamic_identification (``colcon build`` and ``pip install -e .``)."""

from glob import glob

from setuptools import find_packages, setup

PACKAGE = "dynamic_identification"

setup(
    name=PACKAGE,
    version="0.1.0",
    package_dir={"": "src"},
    packages=find_packages("src"),
    data_files=[
        ("share/ament_index/resource_index/packages", [f"resource/{PACKAGE}"]),
        (f"share/{PACKAGE}", ["package.xml"]),
        (f"share/{PACKAGE}/launch", sorted(glob("launch/*.py"))),
        (f"share/{PACKAGE}/config", sorted(glob("config/*.yaml"))),
        (f"share/{PACKAGE}/urdf", sorted(glob("urdf/*.urdf"))),
    ],
    install_requires=["setuptools"],
    zip_safe=True,
    maintainer="dynamic_identification maintainers",
    maintainer_email="maintainers@dynamic-identification.invalid",
    description="Identification of robot inverse-dynamics models from joint states and motor currents.",
    license="Apache-2.0",
    python_requires=">=3.10",
    extras_require={"test": ["pytest", "hypothesis"]},
    entry_points={
        "console_scripts": [
            "recorder = dynamic_identification.nodes.recorder:main",
            "sim_robot = dynamic_identification.nodes.sim_robot:main",
            "excitation = dynamic_identification.nodes.excitation:main",
            "estimator = dynamic_identification.nodes.estimator:main",
            "feedforward = dynamic_identification.nodes.feedforward:main",
            "dynid = dynamic_identification.cli:main",
        ],
    },
)
