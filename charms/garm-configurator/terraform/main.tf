resource "juju_application" "garm_configurator" {
  name       = var.app_name
  model_uuid = var.model_uuid

  charm {
    name     = "garm-configurator"
    channel  = var.channel
    revision = var.revision
    base     = var.base
  }

  config      = var.config
  constraints = var.constraints
  units       = var.units
}
