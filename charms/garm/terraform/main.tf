resource "juju_application" "garm" {
  name       = var.app_name
  model_uuid = var.model_uuid

  charm {
    name     = "garm"
    channel  = var.channel
    revision = var.revision
    base     = var.base
  }

  config      = var.config
  constraints = var.constraints
  units       = var.units
  resources   = var.resources
}
