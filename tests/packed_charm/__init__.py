"""The charms as charmcraft packs them, and the packed garm charm run as a Juju unit.

Reusable pieces (see each module):

- `pack`: `declared_platforms`, `runtime_python`, `pack_charm`, `pack_all` (each pack is
  `charmcraft_pack`, charmcraft 4.5's own `pack --destructive-mode` with the patches it lists);
- `artifact.problems(charm_file, charm_dir, platform)`: what a .charm lacks or has too many;
- `hook_tools`: Juju's hook tools as stand-ins (`HookTools.create`, `unit_model`,
  `add_relation`, `add_secret`, `hook_environment`), recording every call;
- `unit`: `unpack` a .charm as the unit agent does, `PackedUnit.hook(name)` runs `dispatch`
  through a `Runner` (here, there, a chroot, a container);
- `machine`: a throwaway overlay root in private namespaces, for hooks that change a machine;
- `garm_scenario`: the garm charm from install to Active against the GARM simulator.
- `systemd_scenario`: the garm charm from install to Active in a container with a real systemd,
  GARM the real binary (`e2e.container`, `ContainerRunner`).
"""
