variable "app_name" {
  description = "Name of the application in the Juju model."
  type        = string
  default     = "garm"
}

variable "base" {
  description = "The operating system the units run."
  type        = string
  default     = "ubuntu@24.04"
}

variable "channel" {
  description = "The Charmhub channel to deploy from."
  type        = string
  default     = "latest/edge"
}

variable "config" {
  description = "Application config: external-url, port, log-level, drain-timeout, handover-grace (docs/reference/garm-charm.md)."
  type        = map(string)
  default     = {}
}

variable "constraints" {
  description = "Juju constraints of the units, e.g. \"cores=2 mem=4G\"; null for the model's defaults (an empty string can fail on apply)."
  type        = string
  default     = null
}

variable "model_uuid" {
  description = "UUID of the Juju model to deploy in."
  type        = string
}

variable "resources" {
  description = "Resource revisions from Charmhub, e.g. { garm-provider-openstack = 3 }. Files cannot be uploaded from Terraform: attach them with juju attach-resource."
  type        = map(string)
  default     = {}
}

variable "revision" {
  description = "Charm revision; null for the channel's latest."
  type        = number
  default     = null
}

variable "units" {
  description = "Number of units. More than one needs the database relation to PostgreSQL."
  type        = number
  default     = 1
}
